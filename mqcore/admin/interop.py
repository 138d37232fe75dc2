"""Signs that a Java redis-streaming service writes to the same Redis through Redisson's
Kryo codec: its dead letters and commit frontiers have Kryo-encoded field names.

A bounded probe (one pipelined round trip: the newest letter of each DLQ and the field
names of partition 0's frontier hash, for at most ``limit`` topics) lets the console tell an
operator that ``encoding`` should be ``java-kryo`` there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mqcore.boundary import redis_errors
from mqcore.codec import kryo
from mqcore.config import RedisClient
from mqcore.keys import KeySpace

__all__ = ["PROBE_TOPICS", "java_kryo_seen"]

PROBE_TOPICS = 50  # topics looked at per probe


def java_kryo_seen(
    client: RedisClient, keys: KeySpace, topics: Sequence[str], *, limit: int = PROBE_TOPICS
) -> dict[str, list[str]]:
    """Topics whose newest dead letter (``dlq``) or frontier hash (``frontier``) Java wrote
    through Redisson's Kryo codec, among the first ``limit`` of ``topics``."""
    names = list(topics)[: max(0, limit)]
    if not names:
        return {"dlq": [], "frontier": []}
    with redis_errors("probe Java data"):
        pipe = client.pipeline(transaction=False)
        for topic in names:
            pipe.xrevrange(keys.dlq(topic), "+", "-", count=1)
            pipe.hkeys(keys.commit_frontier(topic, 0))
        replies = pipe.execute(raise_on_error=False)
    dlq, frontier = [], []
    for i, topic in enumerate(names):
        letters, fields = replies[2 * i], replies[2 * i + 1]
        if _any_kryo(_names(letters)):
            dlq.append(topic)
        if isinstance(fields, list) and _any_kryo(fields):
            frontier.append(topic)
    return {"dlq": dlq, "frontier": frontier}


def _names(letters: Any) -> list[Any]:
    if not isinstance(letters, list) or not letters:
        return []
    fields = letters[0][1]
    return list(fields) if isinstance(fields, dict) else list(fields[0::2])


def _any_kryo(names: Sequence[Any]) -> bool:
    return any(isinstance(n, bytes) and kryo.looks_kryo(n) for n in names)
