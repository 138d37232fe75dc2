"""Bulk dead-letter replay jobs: preview (freeze the set), start, cancel.

A preview freezes the matching ids into a draft job ("N letters, ids A..B");
starting it needs a reason or ticket and queues the Celery task by name (the
task imports the runner, :mod:`dashboard.services.replay_runner`, never the
reverse). Every step is audited like a single replay.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from config.celery import app as current_app  # the app this process queues tasks on
from dashboard.clusters import dead_letters
from dashboard.masking import check_text_filter
from dashboard.models import AuditEventType, ReplayJob, ReplayJobStatus
from dashboard.permissions import Action, payload_visible
from dashboard.selectors.dlq import letter_filter
from dashboard.services.audit import Actor, audit_filters, audited, require_reason
from dashboard.services.dlq import AS_DEAD_LETTERED, ReplayTarget
from dashboard.services.replay_runner import complete_job_audit
from mqcore.codec import validate_id

__all__ = [
    "REPLAY_TASK",
    "BulkSelection",
    "dlq_bulk_cancel",
    "dlq_bulk_preview",
    "dlq_bulk_start",
    "draft_cutoff",
    "drafts_expire",
    "frozen_set_ref",
]

REPLAY_TASK = "dashboard.replay.run_job"  # the Celery task that runs a started job
MAX_BULK = int(settings.DLQ_BULK_MAX_LETTERS)
MAX_RATE_LIMIT = 1_000_000  # letters per second; the column holds up to 2^31 - 1


def draft_cutoff() -> Any:
    """Drafts (previewed, never started) created before this instant have expired."""
    return timezone.now() - timedelta(seconds=int(settings.DLQ_DRAFT_TTL_S))


def drafts_expire() -> int:
    """Delete expired drafts (run on each preview); returns how many were deleted."""
    stale = ReplayJob.objects.filter(status=ReplayJobStatus.DRAFT, created_at__lt=draft_cutoff())
    return int(stale.delete()[0])


@dataclass(frozen=True, slots=True)
class BulkSelection:
    """What a bulk preview freezes: explicit ids, or every letter matching the filter."""

    ids: tuple[str, ...] = ()
    partition: int | None = None
    key: str | None = None
    text: str | None = None
    since_ms: int | None = None
    until_ms: int | None = None

    def filters(self) -> dict[str, Any]:
        data = {k: v for k, v in asdict(self).items() if k != "ids" and v not in (None, "")}
        if self.ids:
            data["selected"] = len(self.ids)
        return data


def dlq_bulk_preview(
    actor: Actor, *, selection: BulkSelection, target: ReplayTarget = AS_DEAD_LETTERED
) -> ReplayJob:
    """Freeze the set into a draft job ("N letters, ids A..B"); nothing is replayed yet."""
    target.require(actor)
    cluster, topic = actor.cluster, actor.topic
    check_text_filter(selection.text, visible=payload_visible(actor.user, cluster, topic))
    if selection.ids:
        # one id per value, fully matched: a value carrying newline-separated ids would
        # otherwise freeze as many letters while the preview counted it as one
        ids = list(dict.fromkeys(validate_id(i) for i in selection.ids if i))[:MAX_BULK]
    else:
        ids = dead_letters(cluster).ids_matching(
            topic, max_ids=MAX_BULK, **letter_filter(selection)
        )
    if not ids:
        raise ValueError("no letters match: nothing to replay")
    drafts_expire()
    text = "\n".join(ids)
    return ReplayJob.objects.create(
        cluster=cluster,
        topic=topic,
        created_by=actor.user,
        reason="",
        filters=selection.filters(),
        frozen_ids=text,
        frozen_hash=hashlib.sha256(text.encode()).hexdigest(),
        total=len(ids),
        first_id=ids[0],
        last_id=ids[-1],
        force=target.force,
        target_topic=target.topic or "",
        target_partition=target.partition,
        status=ReplayJobStatus.DRAFT,
    )


def frozen_set_ref(job: ReplayJob) -> str:
    ids = f"{job.first_id}..{job.last_id}"
    return f"job:{job.id} sha256:{job.frozen_hash[:16]} n={job.total} ids {ids}"


def _on(actor: Actor, job: ReplayJob) -> Actor:
    """The actor on ``job``'s cluster and topic."""
    return actor.at(job.cluster, job.topic)


def dlq_bulk_start(
    actor: Actor,
    *,
    job: ReplayJob,
    reason: str,
    ticket: str = "",
    rate_limit: int = 0,
    enqueue: bool = True,
) -> ReplayJob:
    """Start a previewed job (reason or ticket required); a second start is a no-op."""
    actor = _on(actor, job)
    ReplayTarget(job.force, job.target_topic or None, job.target_partition).require(actor)
    reason = require_reason(reason, ticket)
    if not 0 <= rate_limit <= MAX_RATE_LIMIT:
        raise ValueError(f"rate limit: 0..{MAX_RATE_LIMIT} letters per second (0 = none)")
    if job.status != ReplayJobStatus.DRAFT:
        return job
    if job.created_at < draft_cutoff():
        ttl_min = int(settings.DLQ_DRAFT_TTL_S) // 60
        raise ValueError(f"this preview expired (previews last {ttl_min} min): preview again")
    with audited(
        actor,
        AuditEventType.DLQ_BULK_REPLAY,
        frozen_set=frozen_set_ref(job),
        reason=reason,
        ticket=ticket,
        detail={
            "job": str(job.id),
            "total": job.total,
            "force": job.force,
            "target_topic": job.target_topic,
            "target_partition": job.target_partition,
            "rate_limit": rate_limit,
            "filters": audit_filters(job.filters or {}),
        },
    ) as audit:
        started = ReplayJob.objects.filter(pk=job.pk, status=ReplayJobStatus.DRAFT).update(
            status=ReplayJobStatus.QUEUED,
            reason=reason,
            ticket=ticket,
            rate_limit=rate_limit,
            audit_event_id=audit.intent.pk,
        )
        job.refresh_from_db()
        if not started:
            audit.set("already-started")
            return job
        audit.leave_open()  # the job's runner writes the outcome (complete_job_audit)
    if enqueue:
        try:
            current_app.send_task(REPLAY_TASK, args=(str(job.pk),))
        except Exception as exc:
            ReplayJob.objects.filter(pk=job.pk).update(
                status=ReplayJobStatus.FAILED, error=f"could not enqueue: {exc}"
            )
            audit.set("failed", detail={"error": str(exc)[:300]})
            audit.close()
            raise
    return job


def dlq_bulk_cancel(actor: Actor, *, job: ReplayJob) -> ReplayJob:
    """Ask a running job to stop at its next chunk (a queued or draft one stops at once)."""
    actor = _on(actor, job)
    actor.require(Action.REPLAY)
    ref, detail = frozen_set_ref(job), {"job": str(job.id)}
    with audited(actor, AuditEventType.DLQ_BULK_CANCEL, frozen_set=ref, detail=detail) as audit:
        stopped = ReplayJob.objects.filter(
            pk=job.pk, status__in=[ReplayJobStatus.DRAFT, ReplayJobStatus.QUEUED], cursor=0
        ).update(status=ReplayJobStatus.CANCELLED, finished_at=timezone.now())
        if not stopped:
            ReplayJob.objects.filter(pk=job.pk, status=ReplayJobStatus.RUNNING).update(
                status=ReplayJobStatus.CANCELLING
            )
        job.refresh_from_db()
        audit.set(str(job.status))
    if stopped and job.audit_event_id:
        complete_job_audit(job)
    return job
