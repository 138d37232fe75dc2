"""Celery tasks of the collectors (thin: they call dashboard.collectors.passes), and the
worker's log of the passes they run: one DEBUG line per pass, one INFO summary per minute.

A pass runs every few seconds per cluster; logging each at INFO buries everything
else in the worker's output. :class:`PassLog` logs each pass at DEBUG and, at
most once per ``every_ms`` (a minute), one INFO line over the latest stored pass
of every cluster: "collected 3 topics, 16 partitions, 6 ms, 2 alerts open".
Failures stay at WARNING where the pass logs them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from celery import shared_task

from dashboard.collectors.notify import alert_notify
from dashboard.collectors.passes import collect_cluster
from mqcore import clock
from mqcore.models import ClusterSnapshot

__all__ = ["PassLog", "alert_notify_task", "collect_cluster_task", "pass_log"]


@shared_task(name="dashboard.tasks.collect.collect_cluster_task", bind=True, ignore_result=True)
def collect_cluster_task(self: Any, cluster: str) -> dict[str, Any]:
    """One pass over ``cluster``; the task id is the slot claim token (a duplicate beat
    never writes a pass twice)."""
    result = collect_cluster(cluster, token=str(self.request.id or ""))
    pass_log.record(
        cluster,
        snapshot=result.snapshot,
        elapsed_ms=result.elapsed_ms,
        alerts_open=result.alerts_open,
        stored=result.stored,
    )
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
    """POST an alert open/close to the webhook (retried inside and by Celery)."""
    return alert_notify(event)


log = logging.getLogger("dashboard.collectors")

SUMMARY_EVERY_MS = 60_000


@dataclass
class PassLog:
    """Per worker process: the latest pass per cluster and when the last summary went out."""

    every_ms: int = SUMMARY_EVERY_MS
    latest: dict[str, dict[str, Any]] = field(default_factory=dict)
    last_summary_ms: int | None = None

    def record(
        self,
        cluster: str,
        *,
        snapshot: ClusterSnapshot | None,
        elapsed_ms: float,
        alerts_open: int | None,
        stored: bool,
        now_ms: int | None = None,
    ) -> None:
        now = clock.now_ms() if now_ms is None else now_ms
        topics = snapshot.topics if snapshot is not None else []
        partitions = sum(t.partitions for t in topics)
        log.debug(
            "collector %s: %s, %d topics, %d partitions, %.0f ms, %s alerts open",
            cluster,
            "stored" if stored else "not stored",
            len(topics),
            partitions,
            elapsed_ms,
            "?" if alerts_open is None else alerts_open,
        )
        if stored:
            self.latest[cluster] = {
                "topics": len(topics),
                "partitions": partitions,
                "ms": elapsed_ms,
                "alerts": alerts_open or 0,
            }
        if self.last_summary_ms is None:
            self.last_summary_ms = now  # the first summary comes a minute after the first pass
            return
        if now - self.last_summary_ms < self.every_ms or not self.latest:
            return
        self.last_summary_ms = now
        rows = self.latest.values()
        log.info(
            "collected %d topics, %d partitions, %.0f ms, %d alerts open%s",
            sum(r["topics"] for r in rows),
            sum(r["partitions"] for r in rows),
            sum(r["ms"] for r in rows),
            sum(r["alerts"] for r in rows),
            f" ({len(self.latest)} clusters)" if len(self.latest) > 1 else "",
        )
        self.latest.clear()


pass_log = PassLog()
