"""The incident timeline in the console store: events of a cluster, bounded in time and count.

One sorted set per cluster (score: the event's epoch ms) and one per topic (the
same members, so a topic's timeline never scans the others). A member is the
event's JSON with an ``id`` first: ``"<at_ms>:s<seq>"``, so members of the same
millisecond sort by their sequence and a cursor (``before``) is exact.

Bounds: members older than the longest series retention are removed with every
write, the newest ``INCIDENT_TIMELINE_MAX`` are kept, and every key expires one
retention after its last write (a vanished topic's index goes away by itself).
Every multi-member command carries at most :data:`CHUNK` members; a read scans
at most :data:`SCAN_CHUNKS` chunks of :data:`CHUNK` and says where it stopped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from dashboard.store.keys import ConsoleKeys, dumps, loads
from dashboard.store.points import tiers
from mqcore.wire import Command

__all__ = [
    "CHUNK",
    "SCAN_CHUNKS",
    "IncidentPage",
    "event_key",
    "incidents_commands",
    "incidents_read",
    "retention_ms",
]

CHUNK = 500
SCAN_CHUNKS = 10


def retention_ms() -> int:
    """How long events stay: the longest series retention."""
    return max(t.retention_s for t in tiers()) * 1000


def event_key(event_id: str) -> tuple[int, str]:
    """The order of events (newest first = descending): (at_ms, tag) of an id "<ms>:<tag>".

    Raises ValueError for anything else.
    """
    at, sep, tag = str(event_id).partition(":")
    if not sep or not at.lstrip("-").isdigit() or not tag:
        raise ValueError("a cursor looks like <epoch ms>:<tag>, e.g. 1767225600000:s000001")
    return int(at), tag


def incidents_commands(
    keys: ConsoleKeys, cluster: str, events: Sequence[Mapping[str, Any]], now_ms: int
) -> list[Command]:
    """The writes of this pass's ``events`` (and the trims), for one MULTI/EXEC."""
    horizon = now_ms - retention_ms()
    cap = max(1, int(settings.INCIDENT_TIMELINE_MAX))
    ttl_s = max(1, retention_ms() // 1000)
    by_key: dict[str, list[tuple[bytes, int]]] = {}
    for seq, e in enumerate(events):
        at = int(e.get("at_ms") or now_ms)
        if at <= horizon:
            continue
        member = dumps({"id": f"{at}:s{seq:06d}", **e})
        by_key.setdefault(keys.incidents(cluster), []).append((member, at))
        if e.get("topic"):
            by_key.setdefault(keys.incidents_topic(cluster, str(e["topic"])), []).append(
                (member, at)
            )
    cmds: list[Command] = []
    for key, members in by_key.items():
        for i in range(0, len(members), CHUNK):
            scored = dict(members[i : i + CHUNK])
            cmds.append(("ZADD", key, *[x for m, at in scored.items() for x in (at, m)]))
    for key in {keys.incidents(cluster), *by_key}:
        cmds.append(("ZREMRANGEBYSCORE", key, "-inf", horizon))
        cmds.append(("ZREMRANGEBYRANK", key, 0, -(cap + 1)))
        if key in by_key:
            cmds.append(("EXPIRE", key, ttl_s))
    return cmds


@dataclass(frozen=True, slots=True)
class IncidentPage:
    """Events newest first; ``next_before`` continues below the last one scanned (None: end)."""

    events: list[dict[str, Any]]
    next_before: str | None
    scanned: int = 0
    truncated: bool = False  # the scan budget ran out before ``limit`` matches


def incidents_read(
    client: Any,
    keys: ConsoleKeys,
    cluster: str,
    *,
    topic: str | None = None,
    since_ms: int | None = None,
    until_ms: int | None = None,
    before: str | None = None,
    limit: int = 100,
    match: Callable[[Mapping[str, Any]], bool] | None = None,
) -> IncidentPage:
    """Stored events of ``cluster`` (or of one topic), newest first, at most ``limit``.

    ``before`` is the id of the last event of the previous page; ``match`` filters
    (kind, group) while scanning at most ``SCAN_CHUNKS x CHUNK`` members.
    """
    key = keys.incidents_topic(cluster, topic) if topic else keys.incidents(cluster)
    cursor = event_key(before) if before else None
    top = until_ms
    if cursor is not None:
        top = cursor[0] if top is None else min(top, cursor[0])
    high: Any = "+inf" if top is None else int(top)
    low: Any = "-inf" if since_ms is None else int(since_ms)
    out: list[dict[str, Any]] = []
    scanned = 0
    last_id: str | None = None
    for chunk in range(SCAN_CHUNKS):
        rows = client.zrevrangebyscore(key, high, low, start=chunk * CHUNK, num=CHUNK)
        for raw in rows:
            scanned += 1
            try:
                e = loads(raw)
                ident = str(e["id"])
                order = event_key(ident)
            except (ValueError, TypeError, KeyError):
                continue  # an odd member never breaks a page
            if cursor is not None and order >= cursor:
                continue
            last_id = ident
            if match is None or match(e):
                out.append(e)
                if len(out) >= limit:
                    return IncidentPage(out, ident, scanned)
        if len(rows) < CHUNK:
            return IncidentPage(out, None, scanned)
    return IncidentPage(out, last_id, scanned, truncated=True)
