"""Keeping series inside their retention: rewrite series past their cap, drop vanished ones."""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

import redis

from dashboard.store.batches import BULK_PER_EXECUTE, chunks, run_batched
from dashboard.store.keys import ConsoleKeys
from dashboard.store.points import (
    TIERS,
    Tier,
    decode_points,
    encode_points,
    tier_limits,
    tiers,
    trim_points,
)
from mqcore.wire import Command, first_error

__all__ = ["VANISHED_PER_PASS", "forget_vanished", "trim_over_cap"]

VANISHED_PER_PASS = 500  # index members (x every tier's series) dropped per pass at most


def trim_over_cap(
    client: redis.Redis, lengths: Mapping[str, tuple[int, Tier, struct.Struct]], now_ms: int
) -> None:
    """Rewrite the series (of ``lengths``: key -> bytes, tier, format) past their cap
    with only the points inside their retention.

    Series are read and written back :data:`~dashboard.store.batches.BULK_PER_EXECUTE`
    at a time; one round trip writes a batch and reads the next.
    """
    limits: dict[tuple[Tier, struct.Struct], tuple[int, int]] = {}
    over: list[tuple[str, Tier, int, struct.Struct]] = []
    for key, (length, tier, point) in lengths.items():
        limit = limits.get((tier, point))
        if limit is None:
            limit = limits[tier, point] = tier_limits(tier, point)
        if length >= limit[1]:
            over.append((key, tier, limit[0], point))
    writes: list[Command] = []
    for batch in chunks(over, BULK_PER_EXECUTE):
        cmds = writes + [("GET", key) for key, _, _, _ in batch]
        replies = run_batched(client, cmds, per_execute=len(cmds), translate=False)
        _raise_first(replies)
        writes = []
        for (key, tier, max_points, point), data in zip(batch, replies[-len(batch) :], strict=True):
            kept = trim_points(decode_points(data, point), now_ms, tier.retention_s, max_points)
            writes.append(("SET", key, encode_points(kept, point)))
    if writes:
        _raise_first(run_batched(client, writes, per_execute=len(writes), translate=False))


def _raise_first(replies: list[Any]) -> None:
    error = first_error(replies)
    if error is not None:
        raise error


def forget_vanished(client: Any, keys: ConsoleKeys, cluster: str, now_ms: int) -> None:
    """Drop the series (all tiers) of entities not written for longer than the longest
    retention, at most :data:`VANISHED_PER_PASS` index members per call, in one transaction."""
    horizon = now_ms - max(t.retention_s for t in tiers()) * 1000
    index_key = keys.series_index(cluster)
    stale = client.zrangebyscore(index_key, "-inf", horizon, start=0, num=VANISHED_PER_PASS)
    if not stale:
        return
    pipe = client.pipeline(transaction=True)
    for member in stale:
        metric, entity = keys.series_of_member(member)
        for tier in TIERS:
            pipe.delete(keys.series(cluster, tier, metric, entity))
    pipe.zrem(index_key, *stale)
    pipe.execute()
