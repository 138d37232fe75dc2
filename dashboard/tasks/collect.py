"""Celery tasks of the collectors (thin: they call :mod:`dashboard.collectors.passes`,
which also keeps the worker's log of the passes)."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from dashboard.collectors.notify import alert_notify
from dashboard.collectors.passes import collect_cluster

__all__ = ["alert_notify_task", "collect_cluster_task"]


@shared_task(name="dashboard.tasks.collect.collect_cluster_task", bind=True, ignore_result=True)
def collect_cluster_task(self: Any, cluster: str) -> dict[str, Any]:
    """One pass over ``cluster``; the task id is the slot claim token (a duplicate beat
    never writes a pass twice)."""
    result = collect_cluster(cluster, token=str(self.request.id or ""))
    for event in result.events:
        alert_notify_task.delay(event)
    return {"cluster": cluster, "stored": result.stored, "error": result.error}


@shared_task(
    name="dashboard.tasks.collect.alert_notify_task",
    autoretry_for=(OSError,),
    retry_backoff=True,
    max_retries=5,
    ignore_result=True,
)
def alert_notify_task(event: dict[str, Any]) -> bool:
    """POST an alert open/close to every webhook, each in its format (retried inside and
    by Celery)."""
    return alert_notify(event)
