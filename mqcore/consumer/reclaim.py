"""Claiming the group's pending entries of a partition for its new owner.

On takeover a worker claims every entry still pending in the group (the
previous owner is gone, released, or fenced); afterwards, every
``reclaim_interval_ms``, the orphans idle longer than ``claim_idle_ms``. Claims
page through XAUTOCLAIM with a cursor, at most :data:`RECLAIM_COUNT` entries a
call. Ids deleted while pending are lost by retention: counted, logged and
acked, never handed to the handler.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import redis

from mqcore.acks import ack
from mqcore.boundary import translate
from mqcore.codec import decode_text
from mqcore.config import RedisClient
from mqcore.consumer.host import WorkerHost

__all__ = ["RECLAIM_COUNT", "ClaimPage", "claim_pending", "drop_deleted"]

log = logging.getLogger("mqcore.consumer")

RECLAIM_COUNT = 100


class ClaimPage(NamedTuple):
    """One XAUTOCLAIM reply: entries now ours, and ids Redis found deleted."""

    entries: list[tuple[Any, Any]]  # (id, fields) still in the stream, in id order
    deleted: list[str]


def claim_pending(
    client: RedisClient,
    stream: str,
    group: str,
    consumer: str,
    *,
    min_idle_ms: int,
    keep_going: Callable[[], bool],
) -> Iterator[ClaimPage]:
    """Claim the group's entries idle >= ``min_idle_ms`` for ``consumer``, a page at a time.

    ``keep_going`` is asked before each XAUTOCLAIM call; the pages end with the cursor.
    """
    cursor = "0-0"
    while keep_going():
        try:
            reply = client.xautoclaim(
                stream, group, consumer, min_idle_ms, cursor, count=RECLAIM_COUNT
            )
        except redis.RedisError as exc:
            raise translate(exc, "reclaim") from exc
        cursor = decode_text(reply[0])
        claimed = reply[1] or []
        deleted = [decode_text(i) for i in (reply[2] if len(reply) > 2 else [])]
        yield ClaimPage([(i, f) for i, f in claimed if f is not None], deleted)
        if cursor in ("0-0", "0"):
            return


def drop_deleted(host: WorkerHost, partition: int, epoch: int, deleted: list[str]) -> None:
    """Count, log and ack pending ids that were trimmed or deleted before handling."""
    host.stats.add(lost_by_retention=len(deleted))
    log.warning(
        "p%d: %d pending entries were trimmed/deleted before handling (lost by retention): %s",
        partition,
        len(deleted),
        ", ".join(deleted[:10]),
    )
    # Redis already dropped them from the PEL; the fenced ack makes sure
    ack(
        host.client,
        host.keys,
        topic=host.topic,
        group=host.group,
        partition=partition,
        ids=deleted,
        epoch=epoch,
        owner=host.name,
        frontier=host.encoding,
    )
