"""Group position moves: the dry run and the move, with an exact ENTRIESREAD at any size.

The entries-read counter of a position ``X`` is ``entries-added`` minus the
entries present after ``X``. That count is taken in ``XRANGE``/``XREVRANGE``
pages of :data:`COUNT_PAGE` from both ends at once; the end that reaches ``X``
first answers (a few pages when ``X`` is near either end). The script
``move_group_position`` then re-checks the anchor it was counted from (the
first entry and max-deleted id from the head, the last-generated id and length
from the tail, adding entries appended since) and sets the position with
``XGROUP SETID ... ENTRIESREAD`` atomically, or answers "changed" and the
partition is counted again (at most :data:`ATTEMPTS` times).
"""

from __future__ import annotations

from typing import Any

from mqcore.admin.position_target import PositionMove, PositionTarget
from mqcore.boundary import redis_errors
from mqcore.codec import decode_text, id_tuple
from mqcore.config import RedisClient
from mqcore.errors import (
    ConcurrentChangeError,
    PositionOutOfRangeError,
    UnknownGroupError,
    UnknownPartitionError,
)
from mqcore.keys import KeySpace
from mqcore.scripts import call_script

__all__ = ["ATTEMPTS", "COUNT_PAGE", "StreamState", "move_partition", "plan_partition"]

COUNT_PAGE = 1000  # entries per XRANGE page while counting (~0.3 ms of Redis time)
ATTEMPTS = 5  # counts of one partition before a move gives up (it kept changing)

StreamState = dict[str, Any]


def _int(raw: Any) -> int | None:
    return None if raw is None else int(raw)


def _state(client: RedisClient, key: str, group: str, topic: str, p: int) -> StreamState:
    """The partition's stream counters and the group's row on it (one pipeline)."""
    with redis_errors(f"read partition {p} of {topic}"):
        pipe = client.pipeline(transaction=False)
        pipe.xinfo_stream(key)
        pipe.xinfo_groups(key)
        pipe.xpending(key, group)
        info, groups, pending = pipe.execute(raise_on_error=False)
    if isinstance(info, Exception) or isinstance(groups, Exception):
        raise UnknownGroupError(f"group {group!r} does not exist on {topic} partition {p}")
    row = next((g for g in groups if decode_text(g["name"]) == group), None)
    if row is None:
        raise UnknownGroupError(f"group {group!r} does not exist on {topic} partition {p}")
    first = info.get("first-entry")
    return {
        "added": int(info.get("entries-added") or 0),
        "length": int(info.get("length") or 0),
        "last": decode_text(info.get("last-generated-id")) or "0-0",
        "first": decode_text(first[0]) if first else "",
        "deleted": decode_text(info.get("max-deleted-entry-id")) or "0-0",
        "current": decode_text(row["last-delivered-id"]),
        "read": _int(row.get("entries-read")),
        "pending": 0 if isinstance(pending, Exception) else int(pending.get("pending") or 0),
    }


def count_split(client: RedisClient, key: str, x: str, state: StreamState) -> tuple[str, int]:
    """``("head", entries <= x)`` or ``("tail", entries > x)``: the end that reached x first."""
    if id_tuple(x) >= id_tuple(state["last"]):
        return "tail", 0
    head_from, tail_from, head, tail = "-", "+", 0, 0
    while True:
        with redis_errors("count entries"):
            pipe = client.pipeline(transaction=False)
            pipe.xrange(key, head_from, x, COUNT_PAGE)
            pipe.xrevrange(key, tail_from, "(" + x, COUNT_PAGE)
            head_page, tail_page = pipe.execute()
        if len(tail_page) < COUNT_PAGE:
            return "tail", tail + len(tail_page)
        if len(head_page) < COUNT_PAGE:
            return "head", head + len(head_page)
        head += len(head_page)
        tail += len(tail_page)
        head_from = "(" + decode_text(head_page[-1][0])
        tail_from = "(" + decode_text(tail_page[-1][0])


def _after(client: RedisClient, key: str, x: str, state: StreamState) -> tuple[str, int, int]:
    """(mode, counted, entries present after ``x``)."""
    mode, counted = count_split(client, key, x, state)
    return mode, counted, counted if mode == "tail" else state["length"] - counted


def _resolve(
    client: RedisClient, key: str, target: PositionTarget, state: StreamState, where: str
) -> str:
    if target.kind == "latest":
        return str(state["last"])
    if target.kind == "earliest":
        return "0-0"
    if target.kind == "id":
        x = str(target.value)
        if id_tuple(x) > id_tuple(state["last"]):
            raise PositionOutOfRangeError(
                f"id {x} is beyond the last id {state['last']} of {where}"
            )
        return x
    ms = int(target.value or 0)
    if ms <= 0:
        return "0-0"
    with redis_errors("find entry by time"):
        before = client.xrevrange(key, f"({ms}-0", "-", 1)
    return decode_text(before[0][0]) if before else "0-0"


def plan_partition(
    client: RedisClient, keys: KeySpace, topic: str, group: str, p: int, target: PositionTarget
) -> tuple[PositionMove, dict[str, Any]]:
    """The dry-run row of partition ``p`` and the script arguments that would apply it."""
    key = keys.partition(topic, p)
    state = _state(client, key, group, topic, p)
    x = _resolve(client, key, target, state, f"{topic} partition {p}")
    _, _, before = _after(client, key, state["current"], state)
    mode, counted, after = _after(client, key, x, state)
    if target.kind in ("latest", "earliest"):
        mode = target.kind
    anchor = state["first"] if mode == "head" else state["last"]
    extra = state["deleted"] if mode == "head" else state["length"]
    move = PositionMove(
        partition=p,
        current_id=state["current"],
        current_entries_read=state["read"],
        lag_before=before,
        target_id=x,
        target_entries_read=state["added"] - after,
        lag_after=after,
        skipped=max(0, before - after),
        redelivered=max(0, after - before),
        pending=state["pending"],
    )
    return move, {"key": key, "args": [group, mode, x, counted, anchor, extra]}


def move_partition(
    client: RedisClient, keys: KeySpace, topic: str, group: str, p: int, target: PositionTarget
) -> PositionMove:
    """Move the group on partition ``p`` (counted again when the partition changed meanwhile)."""
    for _ in range(ATTEMPTS):
        move, call = plan_partition(client, keys, topic, group, p, target)
        reply = call_script(client, "move_group_position", [call["key"]], call["args"])
        status = decode_text(reply[0])
        if status == "changed":
            continue
        if status == "nogroup" or status == "nostream":
            raise UnknownGroupError(f"group {group!r} does not exist on {topic} partition {p}")
        x, read, added = decode_text(reply[1]), int(reply[2]), int(reply[3])
        previous = decode_text(reply[4])
        previous_read = decode_text(reply[5])
        lag_after = added - read
        return PositionMove(
            partition=p,
            current_id=previous,
            current_entries_read=int(previous_read) if previous_read else None,
            lag_before=move.lag_before,
            target_id=x,
            target_entries_read=read,
            lag_after=lag_after,
            skipped=max(0, move.lag_before - lag_after),
            redelivered=max(0, lag_after - move.lag_before),
            pending=move.pending,
        )
    raise ConcurrentChangeError(
        f"{topic} partition {p} kept changing while its position was counted; nothing was "
        "moved on it, try again"
    )


def check_partitions(topic: str, count: int, partitions: list[int] | None) -> list[int]:
    """The partitions asked for (all when None), each checked against the topic's count."""
    if partitions is None:
        return list(range(count))
    if not partitions:
        raise UnknownPartitionError("name at least one partition, or all")
    for p in partitions:
        if isinstance(p, bool) or not isinstance(p, int) or not 0 <= p < count:
            raise UnknownPartitionError(f"topic {topic!r} has partitions 0..{count - 1}, not {p!r}")
    return sorted(set(partitions))
