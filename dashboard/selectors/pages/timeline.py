"""The incident timeline: collector events from the console store merged with operator
actions from the audit log, newest first, for a cluster or one topic.

Collector kinds: status, lease, consumer, dlq, checkpoint, collector, redis
(:mod:`dashboard.collectors.incidents`). Audit kinds, read at request time from
the outcome rows: ``replay`` (dead-letter replays), ``position`` (group position
moves) and ``operator`` (purges, claims, moves to the DLQ). The same kinds hold the
actions taken outside the console (mqcore's CLI and library: moves, replays, purges,
trims), read at request time from mqcore's event stream with a bounded read
(:mod:`dashboard.selectors.outside`), marked ``data.outside`` and "outside the console"
in their text. Events carry names and counts, never payloads, so masking has nothing
to hide here.

Every event has an ``id`` ``"<at_ms>:<tag>"``; the page's last id is the cursor
(``before``) of the next one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from django.db.models import Q

from dashboard.clusters import console_store
from dashboard.collectors.incidents import COLLECTOR_KINDS
from dashboard.models import AuditEvent, AuditEventType, AuditPhase
from dashboard.permissions import topic_visible
from dashboard.selectors.outside import outside_read, outside_timeline_event
from dashboard.selectors.pages.params import ParamError
from dashboard.selectors.pages.snapshot import now_ms, topic_visible_require
from dashboard.selectors.timeline_filter import EVERY_EVENT, TimelineFilter
from dashboard.store.incidents import event_key
from mqcore.clock import ms_from_text

__all__ = [
    "AUDIT_KINDS",
    "KINDS",
    "TimelineFilter",
    "TimelineView",
    "parse_kinds",
    "parse_time",
    "timeline_events",
    "timeline_get",
    "timeline_view",
]

AUDIT_KINDS: dict[str, tuple[str, ...]] = {
    "replay": (
        AuditEventType.DLQ_REPLAY,
        AuditEventType.DLQ_REPLAY_FORCED,
        AuditEventType.DLQ_REPLAY_TARGET,
        AuditEventType.DLQ_BULK_REPLAY,
    ),
    "position": (AuditEventType.GROUP_SET_POSITION,),
    "operator": (
        AuditEventType.DLQ_PURGE,
        AuditEventType.PENDING_CLAIM,
        AuditEventType.PENDING_MOVE_TO_DLQ,
        AuditEventType.MESSAGE_PRODUCE,
        AuditEventType.RETRY_NOW,
        AuditEventType.RETRY_DELETE,
        AuditEventType.TOPIC_GROW,
        AuditEventType.TOPIC_TRIM,
        AuditEventType.TOPIC_DELETE,
        AuditEventType.GROUP_CREATE,
        AuditEventType.GROUP_DELETE,
    ),
}
KINDS: tuple[str, ...] = (*COLLECTOR_KINDS, *AUDIT_KINDS)
MAX_LIMIT = 500


def parse_kinds(raw: Iterable[str]) -> list[str]:
    """Kinds from repeated or comma-separated values; ParamError for unknown ones."""
    kinds = [k.strip() for value in raw for k in str(value).split(",") if k.strip()]
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise ParamError(f"kind must be among {', '.join(KINDS)} (got {unknown[0]!r})")
    return list(dict.fromkeys(kinds))


def parse_time(raw: str | None, name: str) -> int | None:
    """Epoch ms from epoch milliseconds or an ISO time (UTC when no zone); None when empty."""
    if not (raw or "").strip():
        return None
    try:
        return ms_from_text(raw or "")
    except ValueError:
        raise ParamError(f"{name}: use epoch ms or ISO time, e.g. 2026-01-31T12:00") from None


def _ms(when: datetime) -> int:
    return int(when.timestamp() * 1000)


def _counts_text(counts: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items() if isinstance(v, int | float))


def _position_text(counts: Mapping[str, Any], detail: Mapping[str, Any]) -> tuple[str, str]:
    direction = str(detail.get("direction") or "")
    redelivered = int(counts.get("redelivered") or 0)
    skipped = int(counts.get("skipped") or 0)
    parts = []
    if direction in ("rewind", "mixed") or redelivered:
        parts.append(f"position moved back: {redelivered} entries will be delivered again")
    if direction in ("skip", "mixed") or skipped:
        parts.append(f"skipped {skipped} entries")
    if not parts:
        parts.append("position unchanged")
    return "; ".join(parts), "warning" if redelivered or skipped else "info"


def _audit_event(row: AuditEvent, kind: str) -> dict[str, Any]:
    intent = row.completes
    detail: Mapping[str, Any] = row.detail if isinstance(row.detail, dict) else {}
    intent_detail = intent.detail if intent is not None and isinstance(intent.detail, dict) else {}
    counts: Mapping[str, Any] = row.counts if isinstance(row.counts, dict) else {}
    group = str(detail.get("group") or intent_detail.get("group") or "")
    at = _ms(row.created_at)
    severity = "info"
    if kind == "position":
        what, severity = _position_text(counts, detail)
        text = f"group {group}: {what} (by {row.actor})"
    else:
        label = AuditEventType(row.event_type).label if row.event_type in AuditEventType else ""
        numbers = _counts_text(counts)
        text = f"{label or row.event_type} by {row.actor}: {row.outcome}"
        text += f" ({numbers})" if numbers else ""
    if row.outcome in ("failed", "unknown"):
        severity = "warning"
    part = detail.get("partition", intent_detail.get("partition"))
    return {
        "id": f"{at}:a{row.pk:012d}",
        "at_ms": at,
        "kind": kind,
        "topic": row.topic,
        "group": group,
        "partition": part if isinstance(part, int) else None,
        "severity": severity,
        "text": text,
        "data": {
            "audit_id": row.pk,
            "action": row.event_type,
            "outcome": row.outcome,
            "actor": row.actor,
            "counts": dict(counts),
        },
    }


def _audit_events(cluster: str, where: TimelineFilter, limit: int) -> list[dict[str, Any]]:
    kind_of = {t: k for k in where.kinds if k in AUDIT_KINDS for t in AUDIT_KINDS[k]}
    if not kind_of:
        return []
    rows = AuditEvent.objects.select_related("completes").filter(
        phase=AuditPhase.OUTCOME, cluster=cluster, event_type__in=list(kind_of)
    )
    if where.topic:
        rows = rows.filter(topic=where.topic)
    if where.group:
        rows = rows.filter(Q(detail__group=where.group) | Q(completes__detail__group=where.group))
    if where.since_ms is not None:
        rows = rows.filter(created_at__gte=datetime.fromtimestamp(where.since_ms / 1000, UTC))
    if where.until_ms is not None:
        until = datetime.fromtimestamp((where.until_ms + 1) / 1000, UTC)
        rows = rows.filter(created_at__lt=until)
    return [_audit_event(r, kind_of[r.event_type]) for r in rows.order_by("-created_at")[:limit]]


def _outside_events(
    cluster: str, where: TimelineFilter, limit: int
) -> tuple[list[dict[str, Any]], bool]:
    """The actions taken outside the console (mqcore's event stream) of the audit kinds in
    ``where.kinds``, newest first, and whether older ones were left unread."""
    wanted = [k for k in where.kinds if k in AUDIT_KINDS]
    if not wanted:
        return [], False
    read = outside_read(cluster, replace(where, kinds=tuple(wanted)), limit=limit)
    return [outside_timeline_event(e) for e in read.events], read.more


def _key(e: Mapping[str, Any]) -> tuple[int, str]:
    return event_key(str(e["id"]))


def timeline_events(
    cluster: str,
    where: TimelineFilter = EVERY_EVENT,
    *,
    limit: int = 100,
    before: str | None = None,
) -> tuple[list[dict[str, Any]], str | None]:
    """Events ``where`` keeps, newest first (at most ``limit``), and the cursor of the next
    page (None: end).

    No permission check: callers check the topic (:func:`timeline_get`, the topic page).
    """
    limit = max(1, min(int(limit), MAX_LIMIT))
    chosen = where.kinds or KINDS
    cursor = event_key(before) if before else None
    top = where.until_ms
    if cursor is not None:
        top = cursor[0] if top is None else min(top, cursor[0])
    stored = [k for k in chosen if k in COLLECTOR_KINDS]
    page = None
    found: list[dict[str, Any]] = []
    if stored:
        group = where.group
        page = console_store().incidents_get(
            cluster,
            topic=where.topic,
            since_ms=where.since_ms,
            until_ms=where.until_ms,
            before=before,
            limit=limit,
            match=lambda e: e.get("kind") in chosen and (not group or e.get("group") == group),
        )
        found.extend(page.events)
    # the logged sources read below the cursor themselves
    logged = replace(where, kinds=chosen, until_ms=top)
    audit = _audit_events(cluster, logged, limit + 1)
    outside, outside_more = _outside_events(cluster, logged, limit)
    more = len(audit) > limit or outside_more
    audit = [e for e in [*audit, *outside] if cursor is None or _key(e) < cursor]
    if page is not None and page.next_before is not None:
        floor = event_key(page.next_before)
        more = True  # the store has more below its cursor
        audit = [e for e in audit if _key(e) >= floor]
    merged = sorted([*found, *audit], key=_key, reverse=True)
    more = more or len(merged) > limit
    merged = merged[:limit]
    if not more:
        return merged, None
    if merged:
        return merged, str(merged[-1]["id"])
    return merged, page.next_before if page is not None else None


def timeline_get(
    cluster: str,
    *,
    user: Any,
    where: TimelineFilter = EVERY_EVENT,
    limit: int = 100,
    before: str | None = None,
) -> dict[str, Any]:
    """The timeline a user may see: one topic (checked), or the cluster without the events
    of topics the user may not see."""
    if where.topic:
        topic_visible_require(user, cluster, where.topic)
    if before:
        try:
            event_key(before)
        except ValueError as exc:
            raise ParamError(f"before: {exc}") from None
    since_ms, until_ms = where.since_ms, where.until_ms
    if since_ms is not None and until_ms is not None and since_ms > until_ms:
        raise ParamError("since must not be after until")
    events, next_before = timeline_events(cluster, where, limit=limit, before=before)
    seen: dict[str, bool] = {}
    visible = []
    for e in events:
        name = str(e.get("topic") or "")
        if name and name not in seen:
            seen[name] = topic_visible(user, cluster, name)
        if not name or seen[name]:
            visible.append(e)
    return {"events": visible, "next_before": next_before}


@dataclass(frozen=True)
class TimelineView:
    """A page of the timeline with its filters as read: ``context()`` for the page (the
    cluster's, or the topic tab's when ``tab`` names its topic), ``json()`` for the API."""

    cluster: str
    tab: str | None
    topic: str | None
    kinds: list[str]
    group: str | None
    since: str
    until: str
    data: dict[str, Any]

    def context(self) -> dict[str, Any]:
        return {
            "topic": self.tab,
            "picked_topic": self.topic or "",
            "kinds": KINDS,
            "chosen": self.kinds,
            "group": self.group or "",
            "since": self.since,
            "until": self.until,
            "d": self.data,
            "now_ms": now_ms(),
        }

    def json(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster,
            "topic": self.topic,
            "kinds": self.kinds or list(KINDS),
            "group": self.group,
            "events": self.data["events"],
            "next_before": self.data["next_before"],
        }


def timeline_view(
    *,
    user: Any,
    cluster: str,
    topic: str | None = None,
    picked: str = "",
    kind: Sequence[str] = (),
    group: str = "",
    since: str = "",
    until: str = "",
    limit: int = 100,
    before: str = "",
) -> TimelineView:
    """The timeline's filters as a query gives them: the topic of a topic's tab (``topic``)
    or the one ``picked`` on the cluster's, kinds (repeated or comma-separated), a group,
    ``since`` / ``until`` (epoch ms or ISO time), a page (``limit``, ``before``)."""
    chosen = topic or picked.strip() or None
    kinds, only_group = parse_kinds(kind), group.strip() or None
    where = TimelineFilter(
        topic=chosen,
        kinds=tuple(kinds),
        group=only_group,
        since_ms=parse_time(since, "since"),
        until_ms=parse_time(until, "until"),
    )
    data = timeline_get(cluster, user=user, where=where, limit=limit, before=before.strip() or None)
    return TimelineView(cluster, topic, chosen, kinds, only_group, since, until, data)
