"""The dataclasses of the lease, consumer and retry views, built from their snapshot shapes."""

from __future__ import annotations

from typing import Any

from mqcore.models import ConsumerInfo, LeaseInfo, RetryBacklog

__all__ = ["consumer_infos", "lease_info", "retry_backlog_of"]


def lease_info(group: str, partition: int, owner: Any, ttl: Any, epoch: Any) -> LeaseInfo:
    """A partition's lease from its owner, PTTL and epoch (:func:`mqcore.snapshot.lease_dict`)."""
    from mqcore.snapshot import lease_dict

    return LeaseInfo(**lease_dict(group, partition, owner, ttl, epoch))


def consumer_infos(
    group: str, stats: dict[str, dict[str, int]], beats: dict[Any, Any], now: int
) -> list[ConsumerInfo]:
    """A group's consumers (:func:`mqcore.snapshot.consumer_dicts`)."""
    from mqcore.snapshot import consumer_dicts

    return [ConsumerInfo(**c) for c in consumer_dicts(group, stats, beats, now)]


def retry_backlog_of(card: Any, oldest: Any, nxt: Any) -> RetryBacklog:
    """The retry backlog from ``ZCARD`` and the two ``WITHSCORES`` replies (oldest, next due)."""
    return RetryBacklog(
        count=int(card or 0),
        next_due_at_ms=int(nxt[0][1]) if nxt else None,
        oldest_due_at_ms=int(oldest[0][1]) if oldest else None,
    )
