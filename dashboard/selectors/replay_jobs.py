"""A bulk replay job as its page and its JSON show it: progress, the filters it froze
(as the user may read them) and, while a draft, the dry run of its first letters."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from dashboard.audit_details import audit_filters
from dashboard.clusters import dead_letters
from dashboard.models import ReplayJob, ReplayJobStatus
from dashboard.permissions import payload_visible

__all__ = ["DRY_RUN_ROWS", "JobView", "job_progress", "replay_job_get"]

DRY_RUN_ROWS = 50
PLAN = {
    "would-replay": "will replay to {where}",
    "already-replayed": "skip: already replayed",
    "missing": "skip: no longer in the DLQ",
}
JOB_FIELDS = (
    "cluster",
    "topic",
    "first_id",
    "last_id",
    "force",
    "target_partition",
    "reason",
    "active",
    "created_at",
)


def job_progress(job: ReplayJob) -> dict[str, Any]:
    return {
        "id": str(job.id),
        "status": str(job.status),
        "total": job.total,
        "done": job.cursor,
        "replayed": job.replayed,
        "skipped": job.skipped,
        "failed": job.failed,
        "percent": job.percent,
        "error": job.error,
    }


def _label(reason: str, topic: str, partition: int | None) -> str:
    """What the dry run says a letter would do, in words (``reason`` is the script's code)."""
    where = f"{topic}/p{partition}" if partition is not None and partition >= 0 else topic
    return PLAN.get(reason, reason.replace("-", " ")).format(where=where)


@dataclass(frozen=True, slots=True)
class JobView:
    job: ReplayJob
    filters: dict[str, Any]  # a text filter as its digest for one who sees payloads masked
    plan: list[Any] | None  # a draft's dry run of its first letters (nothing written)

    @property
    def plan_more(self) -> int:
        return max(0, self.job.total - DRY_RUN_ROWS)

    def json(self) -> dict[str, Any]:
        job = self.job
        data = job_progress(job) | {k: getattr(job, k) for k in JOB_FIELDS}
        data |= {"filters": self.filters, "target_topic": job.target_topic or None}
        if self.plan is not None:
            data |= {"plan": [asdict(p) for p in self.plan], "plan_more": self.plan_more}
        return data

    def context(self) -> dict[str, Any]:
        context = {"job": self.job, "progress": job_progress(self.job), "job_filters": self.filters}
        if self.plan is not None:
            plan = [
                asdict(p) | {"label": _label(p.reason, p.topic, p.partition)} for p in self.plan
            ]
            context |= {"plan": plan, "plan_more": self.plan_more}
        return context


def replay_job_get(job: ReplayJob, user: Any) -> JobView:
    filters = dict(job.filters or {})
    if not payload_visible(user, job.cluster, job.topic):
        filters = audit_filters(filters)
    if job.status != ReplayJobStatus.DRAFT:
        return JobView(job, filters, None)
    plan = dead_letters(job.cluster).plan(
        job.topic,
        job.ids()[:DRY_RUN_ROWS],
        target_topic=job.target_topic or None,
        target_partition=job.target_partition,
    )
    return JobView(job, filters, plan)
