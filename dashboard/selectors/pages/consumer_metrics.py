"""The Metrics tab of a topic: how each consumer of one group processes, from the metrics
hashes mqcore consumers write with their acks (:mod:`mqcore.consumer_metrics`).

Per consumer over the window (1 h, 6 h: minute hashes; 24 h, 7 d: hour hashes, so at most
360 small hashes a page, read in pipelined chunks): processed, failed, retried and
dead-lettered counts, throughput (processed a second), error rate (failed / processed) and
p50 / p95 / p99 handler time from the summed histogram buckets; slowest (p95) first.
Java consumers write no such hashes (their Micrometer metrics go to Prometheus).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any, NamedTuple

from dashboard import clusters
from dashboard.charts import line_figure
from dashboard.selectors.pages.params import ParamError, mq_refusals
from dashboard.selectors.pages.snapshot import topic_visible_require
from dashboard.selectors.pages.topic import known_group
from mqcore.consumer_metrics import WINDOWS, ConsumerWindow, read_hour, read_window, window_plan
from mqcore.errors import MQError
from mqcore.models import ClusterSnapshot

__all__ = [
    "CHARTED",
    "MAX_CONSUMERS",
    "MAX_SCRAPE_CONSUMERS",
    "MAX_SCRAPE_GROUPS",
    "ScrapeRow",
    "consumer_metrics_get",
    "metrics_figures",
    "scrape_rows",
]

log = logging.getLogger("dashboard.metrics")

MAX_CONSUMERS = 500  # rows a page or an answer lists (the slowest first)
# /metrics: groups read a scrape (one small hash each) and consumer rows exported, in all
MAX_SCRAPE_GROUPS = 2000
MAX_SCRAPE_CONSUMERS = 2000
CHARTED = 10  # consumers drawn in the charts (the slowest)
QUANTILES = {"p50_ms": 0.5, "p95_ms": 0.95, "p99_ms": 0.99}


def _row(w: ConsumerWindow, seconds: float) -> dict[str, Any]:
    processed, failed = w.counts["processed"], w.counts["failed"]
    return {
        "name": w.name,
        **w.counts,
        "throughput_per_s": round(processed / seconds, 6),
        "error_rate": round(failed / processed, 4) if processed else None,
        "mean_ms": round(w.total_us / 1000 / processed, 3) if processed else None,
        **{k: _ms(w.percentile(q)) for k, q in QUANTILES.items()},
    }


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _slowest_first(row: dict[str, Any]) -> tuple[bool, float, float, str]:
    p95, p99 = row["p95_ms"], row["p99_ms"]
    return (p95 is None, -(p95 or 0.0), -(p99 or 0.0), row["name"])


def consumer_metrics_get(
    cluster: str, topic: str, *, user: Any, group: str = "", window: str = ""
) -> dict[str, Any]:
    """Per-consumer metrics of ``group`` (default: the topic's first group) over ``window``
    (1h by default, 6h, 24h or 7d); ``series`` has each consumer's processed and failed
    counts per step (``step_s`` seconds, slot start in epoch ms). ValueError on a bad
    window; NotFoundError on an unknown topic or group."""
    window = window or "1h"
    if window not in WINDOWS:
        raise ParamError(f"window must be one of {', '.join(WINDOWS)}")
    topic_visible_require(user, cluster, topic)
    groups, one = known_group(cluster, topic, group, first=True)
    admin = clusters.admin(cluster)
    step, slots, seconds = window_plan(window, time.time())
    found: dict[str, ConsumerWindow] = {}
    if one:
        with mq_refusals(topic, group=one):
            found = read_window(admin.client, admin.keys, topic, one, slots, step)
    span = len(slots) * seconds
    rows = sorted((_row(w, span) for w in found.values()), key=_slowest_first)
    shown = {row["name"] for row in rows[:MAX_CONSUMERS]}
    series = {
        w.name: [[slot * seconds * 1000, p["p"], p["f"]] for slot, p in sorted(w.series.items())]
        for w in found.values()
        if w.name in shown
    }
    return {
        "topic": topic,
        "group": one,
        "groups": groups,
        "window": window,
        "step_s": seconds,
        "since_ms": slots[0] * seconds * 1000,
        "until_ms": (slots[-1] + 1) * seconds * 1000,
        "consumers": rows[:MAX_CONSUMERS],
        "consumers_total": len(rows),
        "series": series,
    }


def metrics_figures(d: dict[str, Any]) -> dict[str, Any]:
    """Throughput and error-rate charts of the :data:`CHARTED` slowest consumers of ``d``
    (:func:`consumer_metrics_get`), each step of the window a point (zero when idle)."""
    step_ms = d["step_s"] * 1000
    xs = range(d["since_ms"], d["until_ms"], step_ms)
    throughput: dict[str, list[tuple[int, float]]] = {}
    errors: dict[str, list[tuple[int, float]]] = {}
    for row in d["consumers"][:CHARTED]:
        by_slot = {t: (p, f) for t, p, f in d["series"].get(row["name"], [])}
        throughput[row["name"]] = [(t, by_slot.get(t, (0, 0))[0] / d["step_s"]) for t in xs]
        errors[row["name"]] = [
            (t, by_slot[t][1] / by_slot[t][0]) for t in xs if by_slot.get(t, (0, 0))[0]
        ]
    span = {"since_ms": d["since_ms"], "until_ms": d["until_ms"]}
    rate = line_figure("Error rate (failed / processed)", errors, y_title="ratio", **span)
    for trace in rate["data"]:  # steps without messages have no rate: a lone point shows
        trace["mode"] = "lines+markers"
    return {
        "throughput": line_figure("Processed per second", throughput, y_title="msg/s", **span),
        "errors": rate,
    }


class ScrapeRow(NamedTuple):
    """One consumer of one group for ``/metrics``: its counts of the current hour."""

    cluster: str
    topic: str
    group: str
    counts: ConsumerWindow


def scrape_rows(
    snapshots: Mapping[str, ClusterSnapshot | None],
    health: Mapping[str, Mapping[str, Any]],
) -> tuple[list[ScrapeRow], int]:
    """The current hour's consumer metrics of every group the snapshots list, read at scrape
    time from the clusters whose last collector pass succeeded (one small hash a group, at
    most :data:`MAX_SCRAPE_GROUPS` groups), and how many consumer rows were left out past
    :data:`MAX_SCRAPE_CONSUMERS` (or groups past the group cap, or a cluster that failed to
    answer: each counts one)."""
    rows: list[ScrapeRow] = []
    dropped = 0
    budget = MAX_SCRAPE_GROUPS
    for cluster, snapshot in sorted(snapshots.items()):
        if snapshot is None or not health.get(cluster, {}).get("ok"):
            continue
        groups = [(t.topic, g.group) for t in snapshot.topics for g in t.groups]
        dropped += max(0, len(groups) - budget)
        groups = groups[:budget]
        budget -= len(groups)
        if not groups:
            continue
        admin = clusters.admin(cluster)
        try:
            found = read_hour(admin.client, admin.keys, groups, time.time())
        except MQError as exc:
            log.warning("consumer metrics of %s not read: %s", cluster, exc)
            dropped += 1
            continue
        for (topic, group), consumers in sorted(found.items()):
            rows += [ScrapeRow(cluster, topic, group, w) for _, w in sorted(consumers.items())]
    dropped += max(0, len(rows) - MAX_SCRAPE_CONSUMERS)
    return rows[:MAX_SCRAPE_CONSUMERS], dropped
