"""Celery task of the retention housekeeper (thin: dashboard.services.retention)."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from dashboard.services.retention import housekeep_cluster

__all__ = ["housekeep_cluster_task"]


@shared_task(name="dashboard.tasks.housekeep.housekeep_cluster_task", ignore_result=True)
def housekeep_cluster_task(cluster: str) -> dict[str, Any]:
    """Trim ``cluster``'s partitions by its configured retention rules (audited)."""
    return housekeep_cluster(cluster)
