"""Collector health per cluster, as the collectors page and its API twin show it."""

from __future__ import annotations

from typing import Any

from dashboard import store
from dashboard.clusters import cluster_names
from dashboard.permissions import cluster_visible

__all__ = ["collector_rows"]


def collector_rows(user: Any) -> list[dict[str, Any]]:
    """One row per cluster the user may see: the last pass, its timings and errors."""
    health = store.collector_health_get()
    rows = []
    for name in cluster_names():
        if not cluster_visible(user, name):
            continue
        h = health.get(name) or {}
        rows.append(
            {
                "cluster": name,
                "seen": bool(h),
                "ok": bool(h.get("ok")),
                "last_run_ms": h.get("last_run_ms"),
                "last_success_ms": h.get("last_success_ms"),
                "duration_ms": h.get("duration_ms"),
                "snapshot_ms": h.get("snapshot_ms"),
                "runs": int(h.get("runs") or 0),
                "errors": int(h.get("errors") or 0),
                "consecutive_errors": int(h.get("consecutive_errors") or 0),
                "error": h.get("error") or "",
                "topics": h.get("topics"),
                "partitions": h.get("partitions"),
                "commands": h.get("commands"),
                "redis_run_id": str(h.get("redis_run_id") or "")[:12],
                "restarted_at_ms": h.get("restarted_at_ms"),
                "restart": h.get("redis_restart") or None,
                "java": _java(h.get("java")),
                "redis": h.get("redis") if isinstance(h.get("redis"), dict) else None,
            }
        )
    return rows


def _java(probe: Any) -> dict[str, Any] | None:
    """What the last Java probe saw, and whether the frontier encoding needs changing."""
    if not isinstance(probe, dict):
        return None
    dlq = [str(t) for t in probe.get("dlq") or []]
    frontier = [str(t) for t in probe.get("frontier") or []]
    configured = str(probe.get("configured") or "plain")
    seen = bool(dlq or frontier)
    return {
        "dlq": dlq,
        "frontier": frontier,
        "configured": configured,
        "seen": seen,
        "mismatch": seen and configured != "java-kryo",
    }
