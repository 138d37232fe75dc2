"""After a master change: the pending entries of a group at or below where it had been
delivered before, in bounded reads.

Replication is asynchronous: a replica promoted by a failover may not have had the last
``XACK`` of its old master, so entries a consumer acknowledged come back as pending (and
are delivered again by the consumers' reclaim). :func:`pending_up_to` asks, for each
(topic, group, partition), ``XPENDING key group - UP_TO COUNT n``: the first ``n`` pending
ids at or below ``UP_TO`` (the last-delivered id the collector saw before the change). One
such command costs O(log N + n) whatever the size of the group's pending list; they go in
pipelines of :data:`CHUNK`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mqcore.boundary import redis_errors
from mqcore.codec import decode_text
from mqcore.config import RedisClient
from mqcore.keys import KeySpace

__all__ = ["CHUNK", "PENDING_LIMIT", "pending_up_to"]

PENDING_LIMIT = 100  # pending ids read per partition
CHUNK = 500  # commands per pipeline


def pending_up_to(
    client: RedisClient,
    keys: KeySpace,
    asks: Sequence[tuple[str, str, int, str]],
    *,
    limit: int = PENDING_LIMIT,
) -> list[list[str] | None]:
    """For each (topic, group, partition, up_to_id) of ``asks``, the first ``limit`` pending
    ids at or below ``up_to_id`` (None when the group or stream is not there, or the read
    failed)."""
    out: list[list[str] | None] = []
    for start in range(0, len(asks), CHUNK):
        part = asks[start : start + CHUNK]
        with redis_errors("read pending entries after a master change"):
            pipe = client.pipeline(transaction=False)
            for topic, group, partition, up_to in part:
                pipe.xpending_range(keys.partition(topic, partition), group, "-", up_to, limit)
            replies = pipe.execute(raise_on_error=False)
        out.extend(_ids(reply) for reply in replies)
    return out


def _ids(reply: Any) -> list[str] | None:
    if not isinstance(reply, list):
        return None
    ids = []
    for row in reply:
        raw = row.get("message_id") if isinstance(row, dict) else None
        if raw is not None:
            ids.append(decode_text(raw))
    return ids
