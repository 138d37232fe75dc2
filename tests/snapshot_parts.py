"""Snapshot structs (``mqcore.models``) for tests: the fields a test does not name get
plain values (no lag, nothing pending, no leases or consumers, status OK)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from mqcore.models import (
    ClusterSnapshot,
    GroupLag,
    PartitionLag,
    RetryBacklog,
    Status,
    TopicSnapshot,
)

__all__ = ["builtins", "group", "part", "snapshot", "snapshot_of", "topic"]


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


# --- the same from JSON-shaped data (the stored snapshot's fields): what a test names is kept,
# the rest gets the plain values above


_NEVER_NONE = {"status", "status_reason", "pending", "dlq_length", "length", "partitions", "epoch"}


def _with(defaults: dict[str, Any], data: Any) -> dict[str, Any]:
    """``data`` over ``defaults``; a None where the field takes none is its default."""
    given = {k: v for k, v in dict(data).items() if v is not None or k not in _NEVER_NONE}
    return {**defaults, **given}


def _part_of(data: Any, n: int) -> dict[str, Any]:
    lag = dict(data).get("lag", 0)
    plain = {
        "partition": n,
        "last_delivered_id": "0-0",
        "lag": 0,
        "lag_ms": 0,
        "pending": 0,
        "lag_exact": lag is not None,
    }
    return _with(plain, data)


def _group_of(data: Any) -> dict[str, Any]:
    out = _with({"lag": 0, "lag_ms": 0, "pending": 0, "lag_exact": True}, data)
    out["partitions"] = [_part_of(p, n) for n, p in enumerate(out.get("partitions") or ())]
    return out


def _topic_of(data: Any) -> dict[str, Any]:
    out = _with(
        {"partitions": 1, "length": 0, "dlq_length": 0, "leases": [], "consumers": []}, data
    )
    out["retry"] = _with(
        {"count": 0, "next_due_at_ms": None, "oldest_due_at_ms": None}, out.get("retry") or {}
    )
    out["groups"] = [_group_of(g) for g in out.get("groups") or ()]
    out["leases"] = [_with({"owner": None, "ttl_ms": None, "epoch": 0}, x) for x in out["leases"]]
    out["consumers"] = [
        _with({"pending": 0, "idle_ms": 0, "last_seen_ms": None}, c) for c in out["consumers"]
    ]
    return out


def snapshot_of(data: Any) -> ClusterSnapshot:
    """The snapshot struct of JSON-shaped ``data`` (dicts), the fields it leaves out filled."""
    values = _with({"taken_at_ms": 1}, data)
    values["topics"] = [_topic_of(t) for t in values.get("topics") or ()]
    return msgspec.convert(values, ClusterSnapshot)


def builtins(snap: Any) -> Any:
    """A snapshot struct (or part) as the JSON-shaped data the page and the store see."""
    return msgspec.to_builtins(snap)
