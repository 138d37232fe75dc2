"""Lag of a topic's groups per partition: ``XINFO GROUPS``, then the first undelivered entry."""

from __future__ import annotations

from typing import Any

from mqcore import lag as lagmath
from mqcore.admin.calls import Calls, pipeline_lenient
from mqcore.boundary import redis_errors
from mqcore.clock import now_ms
from mqcore.codec import decode_text
from mqcore.config import RedisClient
from mqcore.errors import UnknownGroupError
from mqcore.keys import KeySpace
from mqcore.models import GroupLag, LagExactness, PartitionLag

__all__ = ["group_lags", "partition_lag"]


def group_lags(
    client: RedisClient, keys: KeySpace, topic: str, count: int, group: str | None
) -> list[GroupLag]:
    """:meth:`mqcore.admin.Admin.lag` of a topic with ``count`` partitions (two pipelines)."""
    now = now_ms()
    streams = [keys.partition(topic, p) for p in range(count)]
    infos = pipeline_lenient(
        client,
        [("xinfo_groups", (k,)) for k in streams] + [("xinfo_stream", (k,)) for k in streams],
    )
    groups_by_p, stream_by_p = infos[:count], infos[count:]
    rows: dict[str, list[dict[str, Any]]] = {}
    for p, reply in enumerate(groups_by_p):
        for g in reply or []:
            name = decode_text(g["name"])
            if group is None or name == group:
                rows.setdefault(name, []).append({"p": p, "g": g, "s": stream_by_p[p]})
    if group is not None and group not in rows:
        raise UnknownGroupError(f"group {group!r} does not exist on topic {topic!r}")
    follow: Calls = []
    for name, items in rows.items():
        for it in items:
            key = streams[it["p"]]
            last = decode_text(it["g"]["last-delivered-id"])
            page = 1 if it["g"].get("lag") is not None else lagmath.COUNT_PAGE
            follow.append(("xrange", (key, "(" + last, "+", page)))
            follow.append(("xpending_range", (key, name, "-", "+", 1)))
    replies = pipeline_lenient(client, follow)
    out: list[GroupLag] = []
    i = 0
    for name in sorted(rows):
        parts: list[PartitionLag] = []
        for it in rows[name]:
            first_page, oldest = replies[i], replies[i + 1]
            i += 2
            parts.append(
                partition_lag(
                    client, streams[it["p"]], it["p"], it["g"], it["s"], first_page, oldest, now
                )
            )
        out.append(lagmath.combine_group_lag(name, parts))
    return out


def partition_lag(
    client: RedisClient,
    key: str,
    partition: int,
    g: dict[str, Any],
    stream: dict[str, Any] | None,
    first_page: list[Any] | None,
    oldest: list[dict[str, Any]] | None,
    now: int,
) -> PartitionLag:
    """One partition's row; a NULL lag is counted with bounded ``XRANGE`` pages."""
    last = decode_text(g["last-delivered-id"])
    page = [decode_text(e[0]) for e in first_page or []]
    lag_raw = g.get("lag")
    if lag_raw is not None:
        lag, exactness, reason = int(lag_raw), LagExactness.EXACT, ""
    else:

        def fetch_after(cursor: str) -> list[str]:
            with redis_errors("count lag"):
                entries = client.xrange(key, "(" + cursor, "+", lagmath.COUNT_PAGE)
            return [decode_text(e[0]) for e in entries]

        lag, exactness, reason = lagmath.count_null_lag(page, fetch_after)
    return lagmath.partition_row(
        partition=partition,
        last_delivered_id=last,
        lag=lag,
        exactness=exactness,
        reason=reason,
        first_id=page[0] if page else None,
        now_ms=now,
        pending=int(g.get("pending") or 0),
        oldest_pending_ms=int(oldest[0]["time_since_delivered"]) if oldest else None,
        entries_read=None if g.get("entries-read") is None else int(g["entries-read"]),
        length=int(stream["length"]) if stream else 0,
        last_id=decode_text(stream["last-generated-id"]) if stream else "0-0",
        oldest_pending_id=decode_text(oldest[0]["message_id"]) if oldest else None,
        oldest_pending_consumer=decode_text(oldest[0]["consumer"]) if oldest else None,
    )
