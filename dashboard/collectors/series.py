"""The time-series points of one pass: what is recorded per topic and group, and the
roll-up buckets of the coarse tiers.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mqcore.models import ClusterSnapshot, TopicSnapshot

__all__ = [
    "GROUP_METRICS",
    "MEMORY_METRIC",
    "PARTITION_METRIC",
    "PARTITION_PRODUCED_METRIC",
    "PARTITION_SAMPLE_MS",
    "TOPIC_METRICS",
    "partition_points",
    "partition_produced",
    "series_points",
]

TOPIC_METRICS = (
    "lag",
    "lag_ms",
    "pending",
    "oldest_pending_ms",
    "dlq_length",
    "length",
    "retry_count",
    "produced_total",
)
GROUP_METRICS = ("lag", "lag_ms", "pending", "consumed_total")
# per-partition lag, entity "topic/group/partition": sampled once a minute, not every pass
# (one series per partition would otherwise double a big deployment's writes)
PARTITION_METRIC = "partition_lag"
# per-partition produced counter, entity "topic/partition", sampled with partition_lag:
# the partition skew of the topic page is its rate per partition
PARTITION_PRODUCED_METRIC = "partition_produced_total"
# bytes of a topic's partition streams (MEMORY USAGE), entity "topic": a rotating share of
# the topics once a minute (dashboard.collectors.read.memory_pass)
MEMORY_METRIC = "memory_bytes"
PARTITION_SAMPLE_MS = 60_000


def series_points(snap: ClusterSnapshot) -> Iterator[tuple[str, str, float]]:
    """(metric, entity, value) of this pass for every topic and group series, as the store
    takes them (a quarter of a million triples at 50,000 partitions: never all held)."""
    for topic in snap.topics:
        if topic.error:
            continue
        name = topic.topic
        group_points: list[tuple[str, str, float]] = []
        produced: Any = None  # the most entries a group saw: its entries read plus its lag
        for group in topic.groups:
            entity = f"{name}/{group.group}"
            consumed: Any = 0  # None when a partition's entries-read is unknown
            for p in group.partitions:
                read = p.entries_read
                if read is None:
                    consumed = None
                    break
                consumed += read
            lag = group.lag
            if consumed is not None and lag is not None:
                seen = (lag or 0) + consumed
                if produced is None or seen > produced:
                    produced = seen
            for metric, value in (
                ("lag", lag),
                ("lag_ms", group.lag_ms),
                ("pending", group.pending),
                ("consumed_total", consumed),
            ):
                if value is not None:
                    group_points.append((metric, entity, float(value)))
        for metric, value in (
            ("lag", topic.lag),
            ("lag_ms", topic.lag_ms),
            ("pending", topic.pending),
            ("oldest_pending_ms", topic.oldest_pending_ms),
            ("dlq_length", topic.dlq_length),
            ("length", topic.length),
            ("retry_count", topic.retry.count),
            ("produced_total", topic.length if produced is None else produced),
        ):
            if value is not None:
                yield (metric, name, float(value))
        yield from group_points


def partition_points(snap: ClusterSnapshot) -> Iterator[tuple[str, str, float]]:
    """(``partition_lag``, "topic/group/partition", lag) of every partition with a known lag,
    and (``partition_produced_total``, "topic/partition", entries added) of every partition,
    as the store takes them."""
    for topic in snap.topics:
        if topic.error:
            continue
        name = topic.topic
        for group in topic.groups:
            prefix = f"{name}/{group.group}/"
            for p in group.partitions:
                lag = p.lag
                if lag is not None:
                    yield (PARTITION_METRIC, f"{prefix}{p.partition}", float(lag))
        for n, value in enumerate(partition_produced(topic)):
            if value is not None:
                yield (PARTITION_PRODUCED_METRIC, f"{name}/{n}", value)


def partition_produced(topic: TopicSnapshot) -> list[float | None]:
    """Entries ever added to each partition of one snapshot topic: the highest
    ``entries_read + lag`` of its groups with an exact count, else the partition length
    (a lower bound once retention trimmed it); None when neither is known."""
    lengths = topic.partition_lengths
    count = max(topic.partitions, len(lengths))
    out: list[float | None] = [
        float(lengths[p]) if p < len(lengths) and lengths[p] is not None else None
        for p in range(count)
    ]
    best: dict[int, float] = {}
    for group in topic.groups:
        for p in group.partitions:
            lag, read = p.lag, p.entries_read
            if lag is None or read is None:
                continue
            n = p.partition
            best[n] = max(best.get(n, 0.0), float(lag) + float(read))
    for n, value in best.items():
        if 0 <= n < count:
            out[n] = value
    return out
