"""Reads for the checkpoints pages, the API and commands (pipelines area).

Everything comes from mqcore: :class:`mqcore.checkpoints.CheckpointStore` for
records and :class:`mqcore.admin.Admin` for the pipeline group's position per
partition (the sinks move that group, so its lag is the gap between the last
checkpoint and the partition's last id).
"""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings

from mqcore.admin import Admin
from mqcore.checkpoints import CheckpointStore
from mqcore.config import MQConfig
from mqcore.errors import MQError

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


def _now_ms() -> int:
    return int(time.time() * 1000)


def _annotate(summary: dict[str, Any], now_ms: int) -> dict[str, Any]:
    last = summary.get("last_completed_at_ms")
    summary["age_ms"] = (now_ms - last) if last else None
    limit_ms = max_age_s() * 1000
    summary["max_age_s"] = max_age_s()
    summary["stale"] = last is None or now_ms - last > limit_ms
    return summary


def pipeline_list(*, config: MQConfig) -> list[dict[str, Any]]:
    """Every pipeline's summary with ``age_ms`` and ``stale`` (older than the threshold)."""
    now = _now_ms()
    return [_annotate(s, now) for s in CheckpointStore(config).summaries()]


def _partitions(config: MQConfig, summary: dict[str, Any]) -> list[dict[str, Any]]:
    topic, group = summary.get("topic") or "", summary.get("group") or ""
    offsets: dict[str, str] = summary.get("end_offsets") or {}
    if not topic or not group:
        return []
    try:
        lags = Admin(config).lag(topic, group)
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
    *, config: MQConfig, pipeline: str, before: int | None = None, limit: int = HISTORY_PAGE
) -> dict[str, Any] | None:
    """Summary, cards, one history page and per-partition gaps; None when unknown."""
    store = CheckpointStore(config)
    try:
        summary = store.summary(pipeline)
    except ValueError:
        return None
    if summary is None:
        return None
    now = _now_ms()
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
        "partitions": _partitions(config, summary),
        "now_ms": now,
    }


def pipeline_output_get(
    *, config: MQConfig, name: str, sink: str, database_url: str = ""
) -> dict[str, int]:
    """A pipeline's totals ``{key: total}`` as its sink stored them."""
    import pipelines

    pid = pipelines.pipeline_id(name, sink)
    if sink == "sql":
        from mqcore.spark.sinks import sql_totals

        return sql_totals(database_url or pipelines.default_database_url(), pid)
    client = config.client()
    try:
        raw = client.hgetall(config.keys.sink_output(pid, "totals"))
    finally:
        client.close()
    return {k.decode(): int(v) for k, v in raw.items()}
