"""The time series behind a topic's charts, for the API: one metric over a window, per group
(group metrics), per partition (``partition_lag``: the most lagging, 1-minute samples) or of
the topic."""

from __future__ import annotations

from typing import Any

from dashboard.charts import window_ms
from dashboard.clusters import console_store
from dashboard.collectors.series import (
    GROUP_METRICS,
    MEMORY_METRIC,
    PARTITION_METRIC,
    TOPIC_METRICS,
)
from dashboard.selectors.pages.params import NotFoundError, ParamError, parse_choice
from dashboard.selectors.pages.snapshot import now_ms, topic_visible_require
from dashboard.selectors.pages.topic import group_list, partition_lag_series

__all__ = ["SERIES_METRICS", "series_get"]

# every series the collectors write, topic metrics first
SERIES_METRICS = tuple(
    dict.fromkeys((*TOPIC_METRICS, *GROUP_METRICS, PARTITION_METRIC, MEMORY_METRIC))
)
PARTITION_SERIES_MAX = 256  # partition_lag: the most lagging partitions, at most this many


def series_get(
    cluster: str, topic: str, *, user: Any, metric: str = "", window: str = "", group: str = ""
) -> dict[str, Any]:
    """``metric`` (default lag) over ``window`` (default 1h), of one ``group`` or every one;
    ``partition_lag`` answers the :data:`PARTITION_SERIES_MAX` most lagging partitions and
    how many were ``left_out``."""
    metric = parse_choice(metric, "metric", SERIES_METRICS, "lag")
    window = window or "1h"
    try:
        since = now_ms() - window_ms(window)
    except ValueError as exc:
        raise ParamError(str(exc)) from None
    groups = group_list(cluster, topic)
    topic_visible_require(user, cluster, topic)
    if group and group not in groups:
        raise NotFoundError(f"unknown group {group!r} of topic {topic!r}")
    head: dict[str, Any] = {"cluster": cluster, "topic": topic, "metric": metric}
    head |= {"window": window, "since_ms": since}
    names = [group] if group else groups
    if metric == PARTITION_METRIC:
        traces, more = partition_lag_series(
            cluster, topic, groups=names, since_ms=since, limit=PARTITION_SERIES_MAX
        )
        rows = [
            {"group": g, "partition": p, "points": [[t, v] for t, v in pts]} for g, p, pts in traces
        ]
        return head | {"partitions": rows, "left_out": more}
    store = console_store()
    if metric in GROUP_METRICS:
        entities = [f"{topic}/{g}" for g in names]
        found = store.series_many(cluster, metric, entities, since_ms=since)
        points = {e.split("/", 1)[1] if "/" in e else e: pts for e, pts in found.items()}
    else:
        points = {topic: store.series_get(cluster, metric, topic, since_ms=since)}
    return head | {"series": {k: [[t, v] for t, v in pts] for k, pts in points.items()}}
