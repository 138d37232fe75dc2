"""Actions taken outside the console as the console shows them: mqcore's event stream
(:class:`mqcore.outside_events.OutsideEvents`: position moves, trims, replays and purges made
with the mqcore CLI or library, with who, what and why) read for the timeline and the audit
view, each marked "outside the console".

Reads are bounded: one ``XREVRANGE ... COUNT`` of at most :data:`MAX_READ` entries a request,
newest first. The stream lives in the cluster's Redis, so a cluster that cannot be read gives
no outside events (and says so) rather than failing the page. Names, reasons and counts are
recorded by whoever ran the command (untrusted text): pages escape them.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dashboard.clusters import cluster_names, outside_events
from dashboard.permissions import topic_visible
from dashboard.selectors.timeline_filter import EVERY_EVENT, TimelineFilter
from mqcore.clock import iso_from_ms
from mqcore.errors import MQError
from mqcore.outside_events import ACTIONS, OutsideEvent

__all__ = [
    "MAX_READ",
    "OUTSIDE",
    "OutsideRead",
    "outside_audit",
    "outside_read",
    "outside_timeline_event",
    "timeline_kind",
]

log = logging.getLogger(__name__)

OUTSIDE = "outside the console"
MAX_READ = 500  # entries one request reads at most
# the timeline kind of each recorded action (the kinds of the console's own audit rows)
_KINDS = {
    "position.set": "position",
    "dlq.replay": "replay",
    "dlq.purge": "operator",
    "topic.trim": "operator",
}
_TEXT_MAX = 300  # a recorded name or reason is cut to this many characters in a text


@dataclass(frozen=True, slots=True)
class OutsideRead:
    """The outside events read (newest first), whether older ones were left unread, and the
    error when the cluster could not be read."""

    events: list[OutsideEvent]
    more: bool = False
    error: str | None = None


def timeline_kind(action: str) -> str:
    """The timeline kind of a recorded action ("operator" for any other)."""
    return _KINDS.get(action, "operator")


def _entry_ms(event: OutsideEvent) -> int:
    """The event's time: its stream entry id's (the Redis clock, in stream order)."""
    ms = event.id.partition("-")[0]
    return int(ms) if ms.isdigit() else event.at_ms


def outside_read(
    cluster: str,
    where: TimelineFilter = EVERY_EVENT,
    *,
    limit: int,
    who: str | None = None,
) -> OutsideRead:
    """At most ``limit`` events of ``cluster`` that ``where`` keeps (its kinds: the timeline
    kinds of the actions) and ``who`` did, newest first, from one bounded read (``limit + 1``
    entries without filters, :data:`MAX_READ` with them)."""
    limit = max(1, min(int(limit), MAX_READ - 1))
    count = MAX_READ if where.narrows or who else limit + 1
    until_ms, since_ms = where.until_ms, where.since_ms
    before = f"{until_ms + 1}-0" if until_ms is not None and until_ms >= 0 else None
    try:
        rows = outside_events(cluster).recent(count, before=before)
    except MQError as exc:
        log.warning("outside-console events of %s not read: %s", cluster, exc)
        return OutsideRead([], error=str(exc)[:300])
    found: list[OutsideEvent] = []
    for e in rows:
        if since_ms is not None and _entry_ms(e) < since_ms:
            return OutsideRead(found[:limit], more=len(found) > limit)
        if where.keeps(timeline_kind(e.action), e.topic, e.group) and (not who or e.who == who):
            found.append(e)
    return OutsideRead(found[:limit], more=len(found) > limit or len(rows) == count)


def _what_text(action: str, what: Mapping[str, Any]) -> str:
    """The recorded action's numbers, e.g. "rewind: 80 entries will be delivered again"."""
    parts = []
    if action == "position.set":
        direction = str(what.get("direction") or "")
        if direction:
            parts.append(direction[:40])
    for name, value in what.items():
        if isinstance(value, int | float) and not isinstance(value, bool):
            parts.append(f"{str(name)[:40]} {value}")
    return ", ".join(parts[:8])


def outside_timeline_event(e: OutsideEvent) -> dict[str, Any]:
    """An outside event in the timeline's shape (:mod:`dashboard.selectors.pages.timeline`),
    marked ``outside``; its text says who did what and why."""
    at = _entry_ms(e)
    kind = timeline_kind(e.action)
    who, why = e.who[:_TEXT_MAX], e.why[:_TEXT_MAX]
    doing = ACTIONS.get(e.action, e.action[:60])
    text = f"{OUTSIDE}: {who} {doing}"
    if e.group:
        text += f" (group {e.group[:_TEXT_MAX]})"
    numbers = _what_text(e.action, e.what)
    if numbers:
        text += f": {numbers}"
    if why:
        text += f"; why: {why}"
    part = e.what.get("partition")
    warn = kind == "position" or e.action in ("dlq.purge", "topic.trim")
    return {
        "id": f"{at}:o{e.id}",
        "at_ms": at,
        "kind": kind,
        "topic": e.topic,
        "group": e.group or "",
        "partition": part if isinstance(part, int) and not isinstance(part, bool) else None,
        "severity": "warning" if warn else "info",
        "text": text,
        "data": {
            "outside": True,
            "source": e.source,
            "action": e.action,
            "who": e.who,
            "why": e.why,
            "what": e.what,
            "entry_id": e.id,
        },
    }


def outside_audit(
    user: Any,
    *,
    actor: str = "",
    topic: str = "",
    since_ms: int | None = None,
    until_ms: int | None = None,
    limit: int = 50,
) -> dict[str, Any]:
    """The audit view's outside events: the newest ``limit`` of every cluster whose topic
    ``user`` may see (``actor`` filters on who acted), newest first, and the clusters that
    could not be read (``errors``: cluster -> error)."""
    rows: list[dict[str, Any]] = []
    errors: dict[str, str] = {}
    during = TimelineFilter(topic=topic or None, since_ms=since_ms, until_ms=until_ms)
    for cluster in cluster_names():
        read = outside_read(cluster, during, limit=limit, who=actor or None)
        if read.error:
            errors[cluster] = read.error
        for e in read.events:
            if topic_visible(user, cluster, e.topic):
                at = _entry_ms(e)
                rows.append(
                    {
                        "cluster": cluster,
                        "id": e.id,
                        "at_ms": at,
                        "created_at": iso_from_ms(at),
                        "who": e.who,
                        "action": e.action,
                        "action_text": ACTIONS.get(e.action, e.action),
                        "topic": e.topic,
                        "group": e.group,
                        "why": e.why,
                        "what": e.what,
                        "source": e.source,
                        "outside": True,
                    }
                )
    rows.sort(key=lambda r: (r["at_ms"], r["cluster"], r["id"]), reverse=True)
    return {"events": rows[:limit], "errors": errors}
