"""The topic page's partition view: produce rate, length and memory per partition, how
skewed they are (the busiest partition against the mean: :func:`mqcore.admin.partitions.skew`,
which ``mqcore topic partitions`` uses too), and the keys of a hot partition.

Rates come from the collector's ``partition_produced_total`` series (1-minute samples),
lengths from the latest snapshot, memory from the collector's rotating ``MEMORY USAGE``
samples (``topic["memory"]``); only the hot-key sample reads the MQ Redis live, on
demand and bounded (:func:`mqcore.admin.partitions.hot_keys`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import msgspec

from dashboard import clusters
from dashboard.clusters import console_store
from dashboard.collectors.series import PARTITION_PRODUCED_METRIC
from dashboard.selectors.pages.params import NotFoundError, ParamError
from dashboard.selectors.pages.snapshot import (
    now_ms,
    snapshot_get,
    snapshot_topic_get,
    topic_visible_require,
)
from mqcore.admin.partitions import HOT_KEYS_DEFAULT, HOT_KEYS_MAX, hot_keys, mark_skew
from mqcore.errors import InvalidArgumentError, UnknownTopicError

__all__ = [
    "HOT_KEYS_DEFAULT",
    "HOT_KEYS_MAX",
    "RATE_WINDOWS",
    "RateWindow",
    "hot_keys_get",
    "partitions_get",
]

RateWindow = Literal["5m", "15m", "1h"]
RATE_WINDOWS: dict[RateWindow, int] = {"5m": 5 * 60_000, "15m": 15 * 60_000, "1h": 60 * 60_000}


def _rate(points: Sequence[tuple[int, float]]) -> float | None:
    """Entries per second between the first and the last sample (None: not two samples,
    or the counter went back, e.g. after a restart without persistence)."""
    if len(points) < 2:
        return None
    (t0, v0), (t1, v1) = points[0], points[-1]
    if t1 <= t0 or v1 < v0:
        return None
    return (v1 - v0) * 1000.0 / (t1 - t0)


def partitions_get(
    cluster: str, topic: str, *, user: Any, window: RateWindow = "5m"
) -> dict[str, Any]:
    """Per-partition rate, length and memory of ``topic`` with their skew (from the snapshot
    and the series); ``collected`` is False before the collector saw the topic."""
    topic_visible_require(user, cluster, topic)
    data = snapshot_topic_get(snapshot_get(cluster), topic)
    if data is None:
        try:
            clusters.admin(cluster).partition_count(topic)
        except (UnknownTopicError, InvalidArgumentError):
            raise NotFoundError(f"unknown topic {topic!r}") from None
        return {"topic": topic, "collected": False, "window": window, "partitions": []}
    lengths = data.partition_lengths
    count = max(data.partitions, len(lengths))
    memory = data.memory
    sizes = memory.partitions if memory is not None else []
    since = now_ms() - RATE_WINDOWS[window]
    entities = [f"{topic}/{p}" for p in range(count)]
    series = (
        console_store().series_many(cluster, PARTITION_PRODUCED_METRIC, entities, since_ms=since)
        if entities
        else {}
    )
    rows: list[dict[str, Any]] = []
    for p in range(count):
        rows.append(
            {
                "partition": p,
                "rate_per_s": _rate(series.get(f"{topic}/{p}") or []),
                "length": lengths[p] if p < len(lengths) else None,
                "memory_bytes": sizes[p] if p < len(sizes) else None,
            }
        )
    skews = mark_skew(rows, ("rate_per_s", "length", "memory_bytes"))
    return {
        "topic": topic,
        "collected": True,
        "window": window,
        "partitions": rows,
        "skew": skews,
        "memory": msgspec.to_builtins(memory),
    }


def hot_keys_get(
    cluster: str, topic: str, partition: int, *, user: Any, count: int = HOT_KEYS_DEFAULT
) -> dict[str, Any]:
    """The most frequent keys of the newest ``count`` entries of one partition (live)."""
    topic_visible_require(user, cluster, topic)
    admin = clusters.admin(cluster)
    try:
        partitions = admin.partition_count(topic)
    except (UnknownTopicError, InvalidArgumentError):
        raise NotFoundError(f"unknown topic {topic!r}") from None
    if not 0 <= partition < partitions:
        raise NotFoundError(f"topic {topic!r} has partitions 0..{partitions - 1}")
    try:
        return hot_keys(admin.client, admin.keys, topic, partition, count=count)
    except InvalidArgumentError as exc:
        raise ParamError(str(exc)) from None
