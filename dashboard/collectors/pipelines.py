"""Pipeline groups: the (topic, group) pairs a pipeline's sink moves, from its checkpoints.

A pipeline's sink commits each batch together with the position of its consumer
group (:meth:`mqcore.checkpoints.CheckpointStore.record_committed`), and every
checkpoint summary names that ``topic`` and ``group``. Such a group has no
consumers by design, and holds leases only while its pipeline runs (so that
Java's housekeeper counts it: :mod:`mqcore.lease_keeper`); the console
recognises it from these records (never from its name), shows its checkpoint
health instead of "unowned" partitions and raises no ownership alarm for it.

:func:`pipeline_marks` is pure: the pass derives them from the checkpoint summaries and
sets each on its snapshot group (``group.pipeline``) before statuses are evaluated.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from mqcore.models import PipelineMark

__all__ = ["PIPELINE_HEALTH", "pipeline_health", "pipeline_marks"]

# health of a pipeline, best first
PIPELINE_HEALTH = ("ok", "no_checkpoint", "stale", "failing")


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def pipeline_health(
    summary: Mapping[str, Any], now_ms: int, max_age_ms: int
) -> tuple[str, str, int | None]:
    """``(health, reason, checkpoint_age_ms)`` of one checkpoint summary.

    ``failing``: the latest checkpoint failed (a failed batch newer than the last
    completed one); ``stale``: the last completed checkpoint is older than
    ``max_age_ms``; ``no_checkpoint``: none completed yet; ``ok`` otherwise.
    """
    last_at = _int(summary.get("last_completed_at_ms"))
    age = max(0, now_ms - last_at) if last_at is not None else None
    completed_id = _int(summary.get("last_completed_id"))
    failed_id = _int(summary.get("last_failed_id"))
    if failed_id is not None and (completed_id is None or failed_id > completed_id):
        why = str(summary.get("last_failure_reason") or "no reason recorded")
        return "failing", f"batch {failed_id} failed: {why}", age
    if age is None:
        return "no_checkpoint", "no completed checkpoint yet", None
    if age > max_age_ms:
        return (
            "stale",
            f"last completed checkpoint {age // 1000} s ago (> {max_age_ms // 1000} s)",
            age,
        )
    return "ok", f"last completed checkpoint {age // 1000} s ago", age


def pipeline_marks(
    summaries: Iterable[Mapping[str, Any]], *, now_ms: int, max_age_ms: int
) -> dict[tuple[str, str], PipelineMark]:
    """(topic, group) -> the mark of the pipeline that moves that group.

    The mark: ``name``, ``last_checkpoint_ms`` (last completed), ``checkpoint_age_ms``,
    ``failed_checkpoints`` (the pipeline's count), ``last_failed_ms``, ``health``
    (:data:`PIPELINE_HEALTH`) and ``health_reason``. When several pipelines move the
    same group (a misconfiguration) the first by name wins and ``others`` lists the rest.
    """
    by_pair: dict[tuple[str, str], PipelineMark] = {}
    for summary in sorted(summaries, key=lambda s: str(s.get("pipeline") or "")):
        topic, group = str(summary.get("topic") or ""), str(summary.get("group") or "")
        name = str(summary.get("pipeline") or "")
        if not topic or not group or not name:
            continue
        if (topic, group) in by_pair:
            by_pair[(topic, group)].others.append(name)
            continue
        health, reason, age = pipeline_health(summary, now_ms, max_age_ms)
        by_pair[(topic, group)] = PipelineMark(
            name=name,
            last_checkpoint_ms=_int(summary.get("last_completed_at_ms")),
            checkpoint_age_ms=age,
            failed_checkpoints=_int(summary.get("failed")) or 0,
            last_failed_ms=_int(summary.get("last_failed_at_ms")),
            health=health,
            health_reason=reason,
        )
    return by_pair
