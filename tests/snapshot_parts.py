"""Snapshot structs (``mqcore.models``) for tests: the fields a test does not name get
plain values (no lag, nothing pending, no leases or consumers, status OK)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mqcore.models import (
    ClusterSnapshot,
    GroupLag,
    PartitionLag,
    RetryBacklog,
    Status,
    TopicSnapshot,
)

__all__ = ["group", "part", "snapshot", "topic"]


def part(partition: int, lag: int | None = 0, *, status: str = "OK", **fields: Any) -> PartitionLag:
    values: dict[str, Any] = {
        "last_delivered_id": "0-0", "lag_ms": 0, "pending": 0, "lag_exact": lag is not None,
    }  # fmt: skip
    values.update(fields)
    return PartitionLag(partition=partition, lag=lag, status=Status(status), **values)


def group(
    name: str, partitions: Sequence[PartitionLag] = (), *, status: str = "OK", **fields: Any
) -> GroupLag:
    values: dict[str, Any] = {"lag": 0, "lag_ms": 0, "pending": 0, "lag_exact": True}
    values.update(fields)
    return GroupLag(group=name, partitions=list(partitions), status=Status(status), **values)


def topic(
    name: str, groups: Sequence[GroupLag] = (), *, status: str = "OK", **fields: Any
) -> TopicSnapshot:
    values: dict[str, Any] = {
        "partitions": 1, "length": 0, "dlq_length": 0, "retry": RetryBacklog(0, None, None),
        "leases": [], "consumers": [],
    }  # fmt: skip
    values.update(fields)
    return TopicSnapshot(topic=name, groups=list(groups), status=Status(status), **values)


def snapshot(
    topics: Sequence[TopicSnapshot], taken_at_ms: int = 1, **fields: Any
) -> ClusterSnapshot:
    return ClusterSnapshot(taken_at_ms=taken_at_ms, topics=list(topics), **fields)
