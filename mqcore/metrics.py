"""In-process counters for producers and consumers, exportable to Prometheus.

Counters are kept per (topic, partition) in plain dicts under one lock: cheap
enough for the send path. :meth:`Metrics.register_prometheus` exports them under
the Java library's Micrometer names (docs/redis-layout.md), so dashboards built for a Java
deployment read a Python one unchanged.
"""

from __future__ import annotations

import bisect
import threading
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["COUNTERS", "LATENCY_BUCKETS_MS", "Metrics", "register_prometheus"]

COUNTERS = ("produced", "consumed", "acked", "retried", "dead", "payload_missing")
LATENCY_BUCKETS_MS = (1.0, 2.0, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0)
PROM_PREFIX = "redis_streaming_mq"

Labels = tuple[str, int]


@dataclass
class _Histogram:
    buckets: list[int] = field(default_factory=lambda: [0] * (len(LATENCY_BUCKETS_MS) + 1))
    count: int = 0
    total: float = 0.0


class Metrics:
    """Thread-safe counters per (topic, partition) plus a handle-latency histogram."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counters: dict[str, dict[Labels, int]] = {name: defaultdict(int) for name in COUNTERS}
        self._latency: dict[Labels, _Histogram] = {}

    def inc(self, counter: str, topic: str, partition: int, amount: int = 1) -> None:
        """Add ``amount`` to one of :data:`COUNTERS`."""
        table = self._counters.get(counter)
        if table is None:
            raise ValueError(f"unknown counter {counter!r}; one of {', '.join(COUNTERS)}")
        with self._lock:
            table[(topic, partition)] += amount

    def inc_produced(self, topic: str, partition: int, amount: int = 1) -> None:
        self.inc("produced", topic, partition, amount)

    def inc_consumed(self, topic: str, partition: int, amount: int = 1) -> None:
        self.inc("consumed", topic, partition, amount)

    def inc_acked(self, topic: str, partition: int, amount: int = 1) -> None:
        self.inc("acked", topic, partition, amount)

    def inc_retried(self, topic: str, partition: int, amount: int = 1) -> None:
        self.inc("retried", topic, partition, amount)

    def inc_dead(self, topic: str, partition: int, amount: int = 1) -> None:
        self.inc("dead", topic, partition, amount)

    def inc_payload_missing(self, topic: str, partition: int, amount: int = 1) -> None:
        self.inc("payload_missing", topic, partition, amount)

    def observe_handle_latency(self, topic: str, partition: int, ms: float) -> None:
        """Record one handler run of ``ms`` milliseconds."""
        idx = bisect.bisect_left(LATENCY_BUCKETS_MS, ms)
        with self._lock:
            hist = self._latency.get((topic, partition))
            if hist is None:
                hist = self._latency[(topic, partition)] = _Histogram()
            hist.buckets[idx] += 1
            hist.count += 1
            hist.total += ms

    def get(self, counter: str, topic: str, partition: int | None = None) -> int:
        """A counter's value for one partition, or summed over the topic."""
        with self._lock:
            table = self._counters[counter]
            if partition is not None:
                return table.get((topic, partition), 0)
            return sum(v for (t, _), v in table.items() if t == topic)

    def snapshot(self) -> dict[str, Any]:
        """Plain copy: ``{"counters": {name: {(topic, partition): n}}, "latency": {...}}``."""
        with self._lock:
            return {
                "counters": {name: dict(table) for name, table in self._counters.items()},
                "latency": {
                    labels: {"buckets": list(h.buckets), "count": h.count, "sum": h.total}
                    for labels, h in self._latency.items()
                },
            }

    def reset(self) -> None:
        with self._lock:
            for table in self._counters.values():
                table.clear()
            self._latency.clear()

    def register_prometheus(self, registry: Any = None) -> Any:
        """Export these metrics through ``prometheus_client``; returns the collector."""
        from prometheus_client import REGISTRY

        collector = _Collector(self)
        (registry if registry is not None else REGISTRY).register(collector)
        return collector


def register_prometheus(registry: Any = None, metrics: Metrics | None = None) -> Metrics:
    """Register ``metrics`` (a new :class:`Metrics` when omitted) with ``registry``."""
    metrics = metrics if metrics is not None else Metrics()
    metrics.register_prometheus(registry)
    return metrics


class _Collector:
    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily

        snap = self._metrics.snapshot()
        for name in COUNTERS:
            family = CounterMetricFamily(
                f"{PROM_PREFIX}_{name}", f"Messages {name} per topic and partition",
                labels=["topic", "partition"],
            )  # fmt: skip
            for (topic, partition), value in sorted(snap["counters"][name].items()):
                family.add_metric([topic, str(partition)], value)
            yield family
        hist = HistogramMetricFamily(
            f"{PROM_PREFIX}_handle_latency_ms", "Handler latency in milliseconds",
            labels=["topic", "partition"],
        )  # fmt: skip
        for (topic, partition), data in sorted(snap["latency"].items()):
            cumulative = 0
            buckets: list[tuple[str, float]] = []
            for bound, n in zip((*LATENCY_BUCKETS_MS, float("inf")), data["buckets"], strict=True):
                cumulative += n
                buckets.append(("+Inf" if bound == float("inf") else str(bound), cumulative))
            hist.add_metric([topic, str(partition)], buckets, data["sum"])
        yield hist

    def describe(self) -> Iterator[Any]:
        return iter(())
