"""Prometheus text of the consumer metrics mqcore consumers write (``/metrics`` adds it to
the snapshot's exposition).

Read at scrape time, bounded (:func:`dashboard.selectors.pages.consumer_metrics.scrape_rows`:
one small hash per group, from clusters whose last collector pass succeeded): per cluster,
topic, group and consumer, the current hour's counts as counters, which restart at each
hour (Prometheus' ``rate`` and ``increase`` treat that as a counter reset; what a consumer
did between the last scrape of an hour and its end is not seen), and the handler time as a
histogram in seconds over the consumers' buckets. Cardinality: consumers x groups, at most
``MAX_SCRAPE_CONSUMERS`` rows (4 counters and 19 histogram series each: 17 buckets, count
and sum); ``opsdash_metrics_consumer_rows_dropped`` says how many were left out.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

from dashboard.selectors.pages.consumer_metrics import ScrapeRow
from mqcore.consumer_metrics import BUCKETS_MS, COUNTERS

__all__ = ["consumer_metrics_text"]

PREFIX = "redis_streaming_mq_console_consumer_"
LABELS = ["cluster", "topic", "group", "consumer"]
BOUNDS = [f"{ms / 1000:g}" for ms in BUCKETS_MS] + ["+Inf"]


class _Rows:
    def __init__(self, rows: Sequence[ScrapeRow], dropped: int) -> None:
        self.rows, self.dropped = rows, dropped

    def collect(self) -> Iterator[Any]:
        counters = {
            name: CounterMetricFamily(
                f"{PREFIX}{name}",
                f"Messages {name} by the consumer in the current hour (restarts each hour)",
                labels=LABELS,
            )
            for name in COUNTERS.values()
        }
        handler = HistogramMetricFamily(
            f"{PREFIX}handler_seconds",
            "Handler time in the current hour (restarts each hour)",
            labels=LABELS,
        )
        for row in self.rows:
            w = row.counts
            labels = [row.cluster, row.topic, row.group, w.name]
            for name, family in counters.items():
                family.add_metric(labels, float(w.counts[name]))
            cumulative, buckets = 0, []
            for bound, n in zip(BOUNDS, w.buckets, strict=True):
                cumulative += n
                buckets.append((bound, float(cumulative)))
            handler.add_metric(labels, buckets, w.total_us / 1_000_000)
        yield from counters.values()
        yield handler
        dropped = GaugeMetricFamily(
            "opsdash_metrics_consumer_rows_dropped",
            "Consumer rows (or groups, or clusters that did not answer) left out of /metrics",
        )
        dropped.add_metric([], float(self.dropped))
        yield dropped

    def describe(self) -> Iterator[Any]:
        return iter(())


def consumer_metrics_text(rows: Sequence[ScrapeRow], dropped: int) -> bytes:
    """The exposition of ``rows`` (:func:`scrape_rows`) and the ``dropped`` count."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Rows(rows, dropped))
    return bytes(generate_latest(registry))
