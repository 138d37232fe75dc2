"""The retention floor, for Python readers (the retention view, the snapshot, checkers).

A group's *floor* is its lowest pending id, or the id right after its last-delivered id
when nothing is pending: every entry below it is read and acked by that group. A
partition's *retention floor* is the lowest floor over every consumer group on the stream,
leased or not (pipeline groups are real groups too). Nothing below a group's floor is
deleted by mqcore: prefix deletes (the housekeeper's ``XTRIM MINID``, the commit frontier
Java trims by) never pass the retention floor, and an ack-delete policy deletes an entry
only when no other group still needs it (unread by it, or in its PEL). The scripts apply
the same rule through ``mqcore/scripts/lib/floor.lua``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import redis

from mqcore.boundary import redis_errors
from mqcore.codec import decode_text, id_tuple
from mqcore.config import RedisClient

__all__ = ["Floor", "group_floor", "id_after", "partition_floor", "partition_floors"]

_EXACT_SEQ = 2**53 - 1  # Lua numbers are exact up to here (lib/ids.lua keeps the id beyond)


def id_after(entry_id: str) -> str:
    """The id right after ``entry_id`` (as ``lib/ids.lua`` ``id_after``: beyond the exact Lua
    numbers the id itself, which keeps one entry too many)."""
    ms, seq = id_tuple(entry_id)
    return f"{ms}-{seq + 1}" if seq < _EXACT_SEQ else entry_id


def group_floor(last_delivered_id: str, lowest_pending_id: str | None) -> str:
    """A group's floor: its lowest pending id, or the id after its last-delivered id."""
    after = id_after(last_delivered_id)
    if lowest_pending_id and id_tuple(lowest_pending_id) < id_tuple(after):
        return lowest_pending_id
    return after


@dataclass(frozen=True)
class Floor:
    group: str
    last_delivered_id: str
    lowest_pending_id: str | None
    pending: int
    lag: int | None  # XINFO GROUPS lag (None: Redis cannot tell)
    floor_id: str


def partition_floors(client: RedisClient, key: str) -> list[Floor]:
    """The floor of every group on stream ``key`` (none without the stream): one
    ``XINFO GROUPS`` and, pipelined, ``XPENDING`` summaries of the groups with pending."""
    with redis_errors("read group floors"):
        try:
            groups = client.xinfo_groups(key)
        except redis.ResponseError:  # no such stream (yet): no groups
            return []
        busy = [g for g in groups if int(g.get("pending") or 0) > 0]
        lows: dict[str, str | None] = {}
        if busy:
            pipe = client.pipeline(transaction=False)
            for g in busy:
                pipe.xpending(key, decode_text(g["name"]))
            for g, summary in zip(busy, pipe.execute(), strict=True):
                low = summary.get("min") if summary else None
                lows[decode_text(g["name"])] = decode_text(low) if low else None
    out = []
    for g in groups:
        name, last = decode_text(g["name"]), decode_text(g["last-delivered-id"])
        low = lows.get(name)
        lag = g.get("lag")
        out.append(
            Floor(
                group=name,
                last_delivered_id=last,
                lowest_pending_id=low,
                pending=int(g.get("pending") or 0),
                lag=None if lag is None else int(lag),
                floor_id=group_floor(last, low),
            )
        )
    return out


def partition_floor(floors: Iterable[Floor], ignored: Iterable[str] = ()) -> Floor | None:
    """The group holding the retention floor (the lowest floor) among ``floors`` but the
    ``ignored`` ones (the housekeeper's opted-out groups); None when no group is left."""
    skip = set(ignored)
    kept = [f for f in floors if f.group not in skip]
    return min(kept, key=lambda f: id_tuple(f.floor_id), default=None)
