"""Reads for the checkpoints pages, the API and commands (pipelines area).

Everything comes from mqcore, through the cluster's cached objects in
:mod:`dashboard.clusters`: :class:`mqcore.checkpoints.CheckpointStore` for
records, :class:`mqcore.admin.Admin` for the pipeline group's position per
partition (the sinks move that group, so its lag is the gap between the last
checkpoint and the partition's last id) and :mod:`mqcore.sinkstate` for what
the sinks stored (never pyspark: the web process does not need the spark extra).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from dashboard import clusters
from dashboard.permissions import row_visible
from mqcore.clock import now_ms
from mqcore.commit_journal import CommitJournal
from mqcore.errors import MQError
from mqcore.sinkstate import redis_totals, sql_totals

__all__ = [
    "HISTORY_PAGE",
    "pipeline_get",
    "pipeline_list",
    "pipeline_output_get",
]

HISTORY_PAGE = 20


def max_age_s() -> int:
    """Age after which the last completed checkpoint is stale (the same threshold as its alert)."""
    return int(settings.ALERT_CHECKPOINT_AGE_S)


def _annotate(summary: dict[str, Any], now_ms: int) -> dict[str, Any]:
    last = summary.get("last_completed_at_ms")
    summary["age_ms"] = (now_ms - last) if last else None
    limit_ms = max_age_s() * 1000
    summary["max_age_s"] = max_age_s()
    summary["stale"] = last is None or now_ms - last > limit_ms
    return summary


def _visible(user: Any, cluster: str, summary: dict[str, Any]) -> bool:
    """A pipeline is seen by whom sees its source topic (or, without one, its cluster)."""
    return row_visible(user, cluster, str(summary.get("topic") or "") or None)


def pipeline_list(*, cluster: str, user: Any) -> list[dict[str, Any]]:
    """Every pipeline ``user`` may see (its source topic), with ``age_ms`` and ``stale``
    (older than the threshold)."""
    now = now_ms()
    return [
        _annotate(s, now)
        for s in clusters.checkpoints(cluster).summaries()
        if _visible(user, cluster, s)
    ]


def _partitions(cluster: str, summary: dict[str, Any]) -> list[dict[str, Any]]:
    topic, group = summary.get("topic") or "", summary.get("group") or ""
    offsets: dict[str, str] = summary.get("end_offsets") or {}
    if not topic or not group:
        return []
    try:
        lags = clusters.admin(cluster).lag(topic, group)
    except (MQError, LookupError, ValueError):
        lags = []
    rows = []
    by_part = {p.partition: p for g in lags for p in g.partitions}
    for part in sorted({*by_part, *(int(p) for p in offsets)}):
        lag = by_part.get(part)
        rows.append(
            {
                "partition": part,
                "checkpointed_id": offsets.get(str(part), "0-0"),
                "last_id": lag.last_id if lag else None,
                "gap_messages": lag.lag if lag else None,
                "gap_exact": bool(lag and lag.lag_exact),
                "gap_ms": lag.lag_ms if lag else None,
            }
        )
    return rows


def pipeline_get(
    *,
    cluster: str,
    pipeline: str,
    user: Any,
    before: int | None = None,
    limit: int = HISTORY_PAGE,
) -> dict[str, Any] | None:
    """Summary, cards, one history page and per-partition gaps; None when unknown or
    when ``user`` may not see its source topic."""
    store = clusters.checkpoints(cluster)
    try:
        summary = store.summary(pipeline)
    except ValueError:
        return None
    if summary is None or not _visible(user, cluster, summary):
        return None
    now = now_ms()
    _annotate(summary, now)
    history = store.history(pipeline, limit=limit + 1, before=before)
    more = len(history) > limit
    history = history[:limit]

    def card(batch_id: int | None) -> dict[str, Any] | None:
        return store.get(pipeline, batch_id) if batch_id is not None else None

    return {
        "summary": summary,
        "latest_completed": card(summary.get("last_completed_id")),
        "latest_failed": card(summary.get("last_failed_id")),
        "latest_restore": card(summary.get("last_restore_id")),
        "history": history,
        "next_before": history[-1]["batch_id"] if more and history else None,
        "partitions": _partitions(cluster, summary),
        "commit_under_way": CommitJournal(store.client, store.keys, pipeline).state(),
        "now_ms": now,
    }


def pipeline_output_get(
    *, cluster: str, name: str, sink: str, database_url: str = ""
) -> dict[str, int]:
    """A pipeline's totals ``{key: total}`` as its sink stored them."""
    import pipelines

    pid = pipelines.pipeline_id(name, sink)
    if sink == "sql":
        return sql_totals(database_url or pipelines.default_database_url(), pid)
    return redis_totals(
        clusters.cluster_client(cluster), clusters.cluster_config(cluster).keys, pid
    )
