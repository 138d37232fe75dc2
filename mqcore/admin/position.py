"""Group position moves: the dry run and the move, with an exact ENTRIESREAD at any size.

The entries-read counter of a position ``X`` is ``entries-added`` minus the
entries present after ``X``. That count is taken in ``XRANGE``/``XREVRANGE``
pages of :data:`COUNT_PAGE` from both ends at once; the end that reaches ``X``
first answers (a few pages when ``X`` is near either end). The script
``move_group_position`` then re-checks, for every partition of the move at once,
the anchor it was counted from (the first entry and max-deleted id from the head,
the last-generated id and length from the tail, adding entries appended since)
and sets every position with ``XGROUP SETID ... ENTRIESREAD``, lowering each
partition's commit frontier to the group's new floor (Java's frontier trim must
not delete what the group reads again); or it writes nothing and names the
partitions that changed, which are counted again and the whole set retried (at
most :data:`ATTEMPTS` scripts). Under ack-delete policies every ack changes the
max-deleted id, so "changed" is part of normal operation.

A move over more than :data:`CHUNK` partitions (a topic may have 4,096) goes in
chunks, each all or none, so that no script runs long; one that fails part-way
raises :class:`~mqcore.errors.PartialMoveError` naming the partitions moved and
not moved: the plan to finish is the same target on the partitions not moved
(the audit row records both lists).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mqcore.admin.position_target import PositionMove, PositionTarget
from mqcore.boundary import redis_errors
from mqcore.checkpoints import CheckpointStore
from mqcore.codec import decode_text, id_tuple
from mqcore.config import MQConfig, RedisClient
from mqcore.errors import (
    ConcurrentChangeError,
    MQError,
    PartialMoveError,
    PipelineGroupError,
    PositionOutOfRangeError,
    UnknownGroupError,
    UnknownPartitionError,
)
from mqcore.keys import KeySpace
from mqcore.scripts import call_script

__all__ = [
    "ATTEMPTS",
    "CHUNK",
    "COUNT_PAGE",
    "MoveHow",
    "StreamState",
    "check_pipelines",
    "move_partitions",
    "pipelines_of",
    "plan_moves",
    "plan_partition",
]

COUNT_PAGE = 1000  # entries per XRANGE page while counting (~0.3 ms of Redis time)
ATTEMPTS = 5  # scripts run for one chunk before a move gives up (partitions kept changing)
CHUNK = 64  # partitions per move script: checked all, then moved all in ~3 ms of Redis time

StreamState = dict[str, Any]


@dataclass(frozen=True, slots=True)
class MoveHow:
    """``target``; ``frontier``: the move script's frontier mode (``plain``, ``kryo``);
    ``skip_missing``: partitions without the group are left out (a move of "all")."""

    target: PositionTarget
    frontier: str
    skip_missing: bool = False


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


def _moved(move: PositionMove, reply: list[Any], at: int) -> PositionMove:
    """The row of a partition moved by the script (its five reply values from ``at``)."""
    x, read, added = decode_text(reply[at]), int(reply[at + 1]), int(reply[at + 2])
    previous, previous_read = decode_text(reply[at + 3]), decode_text(reply[at + 4])
    lag_after = added - read
    return PositionMove(
        partition=move.partition,
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


def _plans(
    client: RedisClient, keys: KeySpace, topic: str, group: str, parts: list[int], how: MoveHow
) -> dict[int, tuple[PositionMove, dict[str, Any]]]:
    plans = {}
    for p in parts:
        try:
            plans[p] = plan_partition(client, keys, topic, group, p, how.target)
        except UnknownGroupError:
            if not how.skip_missing:
                raise
    return plans


def plan_moves(
    client: RedisClient, keys: KeySpace, topic: str, group: str, parts: list[int], how: MoveHow
) -> list[PositionMove]:
    """The dry-run rows of ``parts`` (nothing written)."""
    plans = _plans(client, keys, topic, group, parts, how)
    return [plans[p][0] for p in sorted(plans)]


def _move_chunk(
    client: RedisClient, keys: KeySpace, topic: str, group: str, parts: list[int], how: MoveHow
) -> list[PositionMove]:
    """Move the group on ``parts`` in one script: every partition or none."""
    plans = _plans(client, keys, topic, group, parts, how)
    parts = sorted(plans)
    changed: list[int] = []
    for attempt in range(ATTEMPTS):
        if attempt:  # count again only what changed, then check the whole set again
            fresh = _plans(client, keys, topic, group, changed, how)
            for p in changed:
                plans.pop(p, None)  # a move of "all" leaves out a partition the group left
            plans.update(fresh)
            parts = sorted(plans)
        if not parts:
            return []
        script_keys, args = [], [group, how.frontier]
        for p in parts:
            script_keys += [plans[p][1]["key"], keys.commit_frontier(topic, p)]
            args += plans[p][1]["args"][1:]
        reply = call_script(client, "move_group_position", script_keys, args)
        status = decode_text(reply[0])
        if status == "moved":
            return [_moved(plans[p][0], reply, 1 + 5 * i) for i, p in enumerate(parts)]
        named = [parts[int(i) - 1] for i in reply[1:]]
        if status == "nogroup":
            raise UnknownGroupError(
                f"group {group!r} is gone from {topic} partitions {named}; nothing was moved"
            )
        changed = named
    raise ConcurrentChangeError(
        f"{topic} partitions {changed} kept changing while the position was counted; "
        f"nothing was moved on partitions {parts}, try again"
    )


def move_partitions(
    client: RedisClient, keys: KeySpace, topic: str, group: str, parts: list[int], how: MoveHow
) -> list[PositionMove]:
    """Move the group on ``parts``: up to :data:`CHUNK` partitions all or none.

    A move over more partitions goes in chunks of :data:`CHUNK`, each all or none, in
    partition order; if one fails, :class:`PartialMoveError` names the partitions moved
    and those not moved (the plan to finish: the same target on those).
    """
    done: list[PositionMove] = []
    for start in range(0, len(parts), CHUNK):
        try:
            done += _move_chunk(client, keys, topic, group, parts[start : start + CHUNK], how)
        except MQError as exc:
            if not done:
                raise
            moved = [m.partition for m in done]
            rest = parts[start:]
            raise PartialMoveError(
                f"{exc}; partitions {moved} were moved, {rest} were not: move those to "
                "the same target to finish",
                moved,
                rest,
            ) from exc
    return done


def pipelines_of(config: MQConfig, client: RedisClient, topic: str, group: str) -> list[str]:
    """The pipelines whose checkpoint records name ``group`` on ``topic`` (they move it)."""
    summaries = CheckpointStore(config, client).summaries()
    return sorted(
        str(s["pipeline"]) for s in summaries if s.get("topic") == topic and s.get("group") == group
    )


def check_pipelines(pipelines: list[str], group: str, *, force: bool) -> None:
    """Refuse (:class:`PipelineGroupError`) to move a pipeline's group unless forced."""
    if pipelines and not force:
        raise PipelineGroupError(
            f"group {group!r} is moved by pipeline {', '.join(pipelines)}: its sink commits "
            "the group's position with each batch, so a move here is undone or skips what the "
            "pipeline has not written; stop the pipeline (or restore a checkpoint) and force "
            "the move"
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
