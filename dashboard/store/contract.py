"""The read contract pages code against: the console store of the settings."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dashboard.clusters import cluster_names, console_keys, console_redis
from dashboard.store.console import ConsoleStore
from dashboard.store.incidents import IncidentPage

__all__ = [
    "alert_mutes_get",
    "alerts_list",
    "collector_health_get",
    "default_store",
    "incidents_get",
    "lease_timeline_get",
    "series_get",
    "series_many",
    "snapshot_get",
]


def default_store() -> ConsoleStore:
    """The store at ``CONSOLE_REDIS_URL`` under ``CONSOLE_KEY_PREFIX``."""
    return ConsoleStore(console_redis(), console_keys())


def snapshot_get(cluster: str) -> dict[str, Any] | None:
    return default_store().snapshot_get(cluster)


def series_get(
    cluster: str, metric: str, entity: str, *, since_ms: int, until_ms: int | None = None
) -> list[tuple[int, float]]:
    return default_store().series_get(cluster, metric, entity, since_ms=since_ms, until_ms=until_ms)


def series_many(
    cluster: str, metric: str, entities: Sequence[str], *, since_ms: int
) -> dict[str, list[tuple[int, float]]]:
    return default_store().series_many(cluster, metric, entities, since_ms=since_ms)


def lease_timeline_get(cluster: str, topic: str, *, limit: int = 200) -> list[dict[str, Any]]:
    return default_store().lease_timeline_get(cluster, topic, limit=limit)


def incidents_get(cluster: str, **query: Any) -> IncidentPage:
    """Stored incident events (see :func:`dashboard.store.incidents.incidents_read`)."""
    return default_store().incidents_get(cluster, **query)


def collector_health_get() -> dict[str, dict[str, Any]]:
    return default_store().collector_health_get()


def alerts_list(
    cluster: str | None = None, *, include_resolved: bool = False
) -> list[dict[str, Any]]:
    clusters = [cluster] if cluster is not None else cluster_names()
    return default_store().alerts_list(clusters, include_resolved=include_resolved)


def alert_mutes_get(cluster: str, alert_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    return default_store().mutes_get(cluster, alert_ids)
