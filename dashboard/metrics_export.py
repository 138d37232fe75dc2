"""Prometheus text exposition built from the latest stored snapshots (never from live Redis).

Metric names follow the Java library's ``redis_streaming_mq_`` prefix where they
overlap in meaning; console-only figures use ``opsdash_``. Labels never carry
credentials (cluster names only).

Cardinality is bounded: topic-, group-, pipeline- and collector-level series are
always exported (a fixed number per topic, group or pipeline), but the
per-partition series (five per group and partition: lag, lag in time, pending,
oldest pending, status) stop at ``max_partition_series`` in all (settings
``METRICS_MAX_PARTITION_SERIES``). Groups are taken worst status first, then by
cluster, topic and group name, and a group is exported whole or not at all;
``opsdash_metrics_partition_series_dropped`` says how many series were left out.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from mqcore.models import ClusterSnapshot, PartitionLag, PipelineMark, Status

__all__ = ["DEFAULT_MAX_PARTITION_SERIES", "PARTITION_FAMILIES", "metrics_text"]

STATUSES = [s.value for s in Status]
DEFAULT_MAX_PARTITION_SERIES = 50_000
PARTITION_FAMILIES = 5  # lag, lag_seconds, pending, oldest_pending_seconds, partition_status


class _SnapshotCollector:
    """A prometheus_client custom collector over already-loaded snapshots and health."""

    def __init__(
        self,
        snapshots: Mapping[str, ClusterSnapshot | None],
        health: Mapping[str, Mapping[str, Any]],
        alerts: Sequence[Mapping[str, Any]],
        max_partition_series: int,
    ) -> None:
        self.snapshots = snapshots
        self.health = health
        self.alerts = alerts
        self.max_partition_series = max(0, max_partition_series)

    def collect(self) -> Iterator[Metric]:
        p = "redis_streaming_mq_console_"
        lag = GaugeMetricFamily(f"{p}lag", "Entries not yet delivered to the group", labels=_PL)
        lag_s = GaugeMetricFamily(
            f"{p}lag_seconds", "Age of the oldest undelivered entry", labels=_PL
        )
        pending = GaugeMetricFamily(f"{p}pending", "Delivered, not acknowledged", labels=_PL)
        oldest = GaugeMetricFamily(
            f"{p}oldest_pending_seconds", "Idle time of the oldest pending entry", labels=_PL
        )
        part_status = GaugeMetricFamily(
            f"{p}partition_status", "1 for the current status", labels=[*_PL, "status"]
        )
        group_status = GaugeMetricFamily(
            f"{p}group_status", "1 for the current status", labels=[*_GL, "status"]
        )
        topic_status = GaugeMetricFamily(
            f"{p}topic_status", "1 for the current status", labels=[*_TL, "status"]
        )
        dlq = GaugeMetricFamily(f"{p}dlq_depth", "Dead letters in the DLQ", labels=_TL)
        retry = GaugeMetricFamily(f"{p}retry_backlog", "Messages waiting for retry", labels=_TL)
        length = GaugeMetricFamily(f"{p}topic_length", "Entries over all partitions", labels=_TL)
        memory = GaugeMetricFamily(
            f"{p}topic_memory_bytes",
            "MEMORY USAGE of the partition streams (the collector's latest rotating sample)",
            labels=_TL,
        )
        ckpt = GaugeMetricFamily(
            f"{p}checkpoint_age_seconds",
            "Age of the last completed checkpoint",
            labels=["cluster", "pipeline"],
        )
        failed = GaugeMetricFamily(
            f"{p}checkpoints_failed",
            "Failed checkpoints of a pipeline",
            labels=["cluster", "pipeline"],
        )
        pipeline_group = GaugeMetricFamily(
            f"{p}group_pipeline",
            "1 for a group moved by a pipeline's sink (it holds no leases by design)",
            labels=[*_GL, "pipeline", "health"],
        )
        candidates: list[tuple[tuple[int, str, str, str], list[str], list[PartitionLag]]] = []
        for cluster, snap in self.snapshots.items():
            if snap is None:
                continue
            for topic in snap.topics:
                t = topic.topic
                tl = [cluster, t]
                _status(topic_status, tl, topic.status)
                dlq.add_metric(tl, float(topic.dlq_length))
                retry.add_metric(tl, float(topic.retry.count))
                length.add_metric(tl, float(topic.length))
                if topic.memory is not None:
                    memory.add_metric(tl, topic.memory.bytes)
                for group in topic.groups:
                    gl = [cluster, t, group.group]
                    _status(group_status, gl, group.status)
                    mark = group.pipeline
                    if isinstance(mark, PipelineMark):
                        pipeline_group.add_metric([*gl, mark.name, mark.health], 1.0)
                    rank = -group.status.severity
                    candidates.append(((rank, cluster, t, group.group), gl, group.partitions))
            for pipe in snap.pipelines:
                failed.add_metric([cluster, pipe.pipeline], float(pipe.failed))
                last = pipe.last_completed_at_ms
                if last is not None:
                    ckpt.add_metric([cluster, pipe.pipeline], (snap.taken_at_ms - last) / 1000)
        budget = self.max_partition_series
        dropped: dict[str, int] = dict.fromkeys(self.snapshots, 0)
        for (_, cluster, _, _), gl, parts in sorted(candidates, key=lambda c: c[0]):
            cost = PARTITION_FAMILIES * len(parts)
            if cost > budget:
                dropped[cluster] += cost
                continue
            budget -= cost
            for part in parts:
                pl = [*gl, str(part.partition)]
                if part.lag is not None:
                    lag.add_metric(pl, float(part.lag))
                if part.lag_ms is not None:
                    lag_s.add_metric(pl, part.lag_ms / 1000)
                pending.add_metric(pl, float(part.pending))
                if part.oldest_pending_ms is not None:
                    oldest.add_metric(pl, part.oldest_pending_ms / 1000)
                # only the current status: 4,000 x 6 is too many
                part_status.add_metric([*pl, part.status.value], 1.0)
        left_out = GaugeMetricFamily(
            "opsdash_metrics_partition_series_dropped",
            "Per-partition series left out of this scrape by the series bound",
            labels=["cluster"],
        )
        for cluster, count in dropped.items():
            left_out.add_metric([cluster], float(count))
        yield from (lag, lag_s, pending, oldest, part_status, group_status, topic_status)
        yield left_out
        yield from (dlq, retry, length, memory, ckpt, failed, pipeline_group)
        yield from self._collector_metrics()

    def _collector_metrics(self) -> Iterator[Metric]:
        o = "opsdash_collector_"
        duration = GaugeMetricFamily(
            f"{o}duration_seconds", "Duration of the last pass", labels=["cluster"]
        )
        up = GaugeMetricFamily(f"{o}up", "1 when the last pass succeeded", labels=["cluster"])
        last = GaugeMetricFamily(
            f"{o}last_success_timestamp_seconds", "End of the last good pass", labels=["cluster"]
        )
        runs = CounterMetricFamily(f"{o}runs", "Passes run", labels=["cluster"])
        errors = CounterMetricFamily(f"{o}errors", "Passes that failed", labels=["cluster"])
        for cluster, h in self.health.items():
            duration.add_metric([cluster], float(h.get("duration_ms") or 0) / 1000)
            up.add_metric([cluster], 1.0 if h.get("ok") else 0.0)
            if h.get("last_success_ms"):
                last.add_metric([cluster], int(h["last_success_ms"]) / 1000)
            runs.add_metric([cluster], float(h.get("runs") or 0))
            errors.add_metric([cluster], float(h.get("errors") or 0))
        alerts = GaugeMetricFamily(
            "opsdash_alerts_open", "Open alerts", labels=["cluster", "rule", "severity"]
        )
        counts: dict[tuple[str, str, str], int] = {}
        for alert in self.alerts:
            key = (str(alert["cluster"]), str(alert["rule"]), str(alert["severity"]))
            counts[key] = counts.get(key, 0) + 1
        for key, count in sorted(counts.items()):
            alerts.add_metric(list(key), float(count))
        silenced = GaugeMetricFamily(
            "opsdash_alerts_silenced",
            "Open alerts muted by a silence or an acknowledgement (counted in opsdash_alerts_open)",
            labels=["cluster", "rule", "severity", "kind"],
        )
        muted: dict[tuple[str, str, str, str], int] = {}
        for alert in self.alerts:
            mute = alert.get("mute")
            if isinstance(mute, Mapping):
                key4 = (
                    str(alert["cluster"]),
                    str(alert["rule"]),
                    str(alert["severity"]),
                    str(mute.get("kind") or ""),
                )
                muted[key4] = muted.get(key4, 0) + 1
        for key4, count in sorted(muted.items()):
            silenced.add_metric(list(key4), float(count))
        yield from (duration, up, last, runs, errors, alerts, silenced)
        yield from _cluster_nodes(self.health)


def _cluster_nodes(health: Mapping[str, Mapping[str, Any]]) -> Iterator[Metric]:
    """Redis Cluster's per-node health from the collector's minute probe (one series per
    node and figure: bounded by the nodes)."""
    o, nl = "opsdash_redis_node_", ["cluster", "node", "role"]
    memory = GaugeMetricFamily(f"{o}used_memory_bytes", "Memory used by the node", labels=nl)
    ops = GaugeMetricFamily(f"{o}ops_per_second", "Operations per second", labels=nl)
    evicted = GaugeMetricFamily(f"{o}evicted_keys", "Keys evicted since start", labels=nl)
    parts = GaugeMetricFamily(f"{o}partitions", "MQ partition streams on the node", labels=nl)
    coverage = GaugeMetricFamily(
        "opsdash_redis_cluster_slot_coverage", "Share of the 16384 slots served", labels=["cluster"]
    )
    for cluster, h in health.items():
        probe = h.get("redis")
        if not isinstance(probe, Mapping) or not isinstance(probe.get("nodes"), list):
            continue
        coverage.add_metric([cluster], float(probe.get("slot_coverage") or 0.0))
        for node in probe["nodes"]:
            if not isinstance(node, Mapping):
                continue
            labels = [cluster, str(node.get("node") or ""), str(node.get("role") or "")]
            for family, field in (
                (memory, "used_memory"),
                (ops, "ops_per_s"),
                (evicted, "evicted_keys"),
                (parts, "partitions"),
            ):
                value = node.get(field)
                if isinstance(value, int | float):
                    family.add_metric(labels, float(value))
    yield from (memory, ops, evicted, parts, coverage)


_TL = ["cluster", "topic"]
_GL = [*_TL, "group"]
_PL = [*_GL, "partition"]


def _status(family: GaugeMetricFamily, labels: list[str], current: Status) -> None:
    for status in STATUSES:
        family.add_metric([*labels, status], 1.0 if status == current else 0.0)


def metrics_text(
    snapshots: Mapping[str, ClusterSnapshot | None],
    health: Mapping[str, Mapping[str, Any]],
    alerts: Sequence[Mapping[str, Any]] = (),
    *,
    max_partition_series: int = DEFAULT_MAX_PARTITION_SERIES,
) -> bytes:
    """The exposition for ``snapshots`` (cluster -> stored snapshot) and collector health,
    with at most ``max_partition_series`` per-partition series (see the module doc)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_SnapshotCollector(snapshots, health, alerts, max_partition_series))
    return bytes(generate_latest(registry))
