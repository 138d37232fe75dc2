"""The runner of bulk replay jobs (called by the Celery task ``dashboard.replay.run_job``).

A runner holds the job's lease (renewed at every chunk); a runner that dies
loses it after ``DLQ_JOB_LEASE_S`` and the next one resumes at the committed
cursor. Replay records written in the same Lua call as each replay make the
resumed run skip what the dead one already replayed, so counts stay exact.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import TypeVar

from django.conf import settings
from django.db import OperationalError
from django.db.models import Q
from django.utils import timezone

from dashboard.clusters import writer_dead_letters
from dashboard.models import AuditEvent, ReplayJob, ReplayJobStatus
from dashboard.services.audit import audit_complete
from mqcore.config import redact_urls
from mqcore.dlq import DeadLetters
from mqcore.models import ReplayResult

__all__ = ["complete_job_audit", "lease_wait_s", "replay_job_run"]

LANES = 2  # concurrent replay_many calls of an unthrottled job (disjoint ids)
CHUNK = 10_000  # letters per progress commit (replay_many runs them as Lua batches of 100)
# A runner renews its job lease at every chunk (<= 1 s of work); a dead one loses it after this.
LEASE_S = float(settings.DLQ_JOB_LEASE_S)

T = TypeVar("T")


def _db_retry(fn: Callable[[], T], attempts: int = 6) -> T:
    """Run a short runner write again when SQLite says "locked" (it does not queue writers
    across shared-cache connections); PostgreSQL never needs the second try."""
    for attempt in range(attempts):
        try:
            return fn()
        except OperationalError as exc:
            if "locked" not in str(exc) or attempt == attempts - 1:
                raise
            time.sleep(0.05 * (attempt + 1))
    raise AssertionError("unreachable")


def _acquire(job_id: str, owner: str) -> bool:
    now = timezone.now()
    return bool(
        ReplayJob.objects.filter(
            Q(lease_until__isnull=True) | Q(lease_until__lt=now) | Q(lease_owner=owner),
            pk=job_id,
            status__in=[
                ReplayJobStatus.QUEUED,
                ReplayJobStatus.RUNNING,
                ReplayJobStatus.CANCELLING,
            ],
        ).update(lease_owner=owner, lease_until=now + timedelta(seconds=LEASE_S))
    )


def lease_wait_s(job_id: str) -> float:
    """Seconds until a job's current lease expires (0 when free)."""
    until = ReplayJob.objects.filter(pk=job_id).values_list("lease_until", flat=True).first()
    if until is None:
        return 0.0
    return max(0.0, (until - timezone.now()).total_seconds())


def complete_job_audit(job: ReplayJob) -> None:
    if job.audit_event_id is None:
        return
    intent = AuditEvent.objects.filter(pk=job.audit_event_id).first()
    if intent is not None:
        audit_complete(
            intent,
            outcome=str(job.status),
            counts={"replayed": job.replayed, "skipped": job.skipped, "failed": job.failed},
            detail={"job": str(job.id), "total": job.total, "error": job.error[:300]},
        )


def _own_replays(dlq: DeadLetters, topic: str, ids: list[str], tag: str) -> set[str]:
    """Ids among ``ids`` already replayed by the job whose tag is ``tag`` (crash recovery)."""
    mine: set[str] = set()
    for dlq_id in ids:
        if any(tag in rec.by for rec in dlq.replays(topic, dlq_id)):
            mine.add(dlq_id)
    return mine


def _replay_region(
    dlq: DeadLetters, job: ReplayJob, ids: list[str], by: str, pool: ThreadPoolExecutor | None
) -> list[ReplayResult]:
    """Replay ``ids`` (disjoint slices on ``LANES`` connections at once when unthrottled).

    Two lanes keep Redis busy while Python builds the next batch and decodes the
    last one; each letter is still replayed by exactly one atomic script call.
    """

    def lane(part: list[str]) -> list[ReplayResult]:
        return dlq.replay_many(
            job.topic,
            part,
            by=by,
            force=job.force,
            target_topic=job.target_topic or None,
            target_partition=job.target_partition,
        )

    if pool is None or len(ids) < 2 * 100:
        return lane(ids)
    step = -(-len(ids) // LANES)
    parts = [ids[i : i + step] for i in range(0, len(ids), step)]
    out: list[ReplayResult] = []
    for results in pool.map(lane, parts):
        out.extend(results)
    return out


def replay_job_run(*, job_id: str, runner: str | None = None) -> ReplayJob | None:
    """Replay a job's frozen set from its cursor; safe to call again after a crash.

    The runner holds a lease (renewed per chunk) so two workers never run one
    job. After a crash the chunk after the committed cursor may be partly
    replayed already: its letters whose replay record carries this job's tag
    count as replayed and are not sent again (even for forced jobs), so every
    letter is replayed at most once and the counts stay exact.
    Returns None when another runner holds the job.
    """
    owner = runner or uuid.uuid4().hex
    if not _db_retry(lambda: _acquire(job_id, owner)):
        return None
    job = ReplayJob.objects.get(pk=job_id)
    resuming = job.status in (ReplayJobStatus.RUNNING, ReplayJobStatus.CANCELLING)
    ReplayJob.objects.filter(pk=job_id, status=ReplayJobStatus.QUEUED).update(
        status=ReplayJobStatus.RUNNING, started_at=timezone.now()
    )
    ReplayJob.objects.filter(pk=job_id).update(attempts=job.attempts + 1)
    ids = job.ids()
    tag = job.runner_tag
    by = f"{job.created_by.get_username() if job.created_by else 'system'} ({tag})"
    cursor, replayed, skipped, failed = job.cursor, job.replayed, job.skipped, job.failed
    chunk = CHUNK if not job.rate_limit else max(1, min(CHUNK, job.rate_limit))
    error = ""
    final = ReplayJobStatus.COMPLETED
    pool = ThreadPoolExecutor(LANES, thread_name_prefix="replay") if not job.rate_limit else None
    try:
        # a cluster made read-only since the job was queued: the job fails, with the reason
        dlq = writer_dead_letters(job.cluster)
        cancelled = job.status == ReplayJobStatus.CANCELLING
        while cursor < len(ids) and not cancelled:
            started = time.monotonic()
            batch = ids[cursor : cursor + chunk]
            todo = batch
            if resuming:
                mine = _own_replays(dlq, job.topic, batch, tag)
                replayed += len(mine)
                todo = [i for i in batch if i not in mine]
                resuming = False
            if todo:
                for res in _replay_region(dlq, job, todo, by, pool):
                    if res.replayed:
                        replayed += 1
                    elif res.reason == "already-replayed":
                        skipped += 1
                    else:
                        failed += 1
            cursor += len(batch)
            progress = {
                "cursor": cursor,
                "replayed": replayed,
                "skipped": skipped,
                "failed": failed,
            }
            renewed = _db_retry(
                lambda p=progress: ReplayJob.objects.filter(  # type: ignore[misc]
                    pk=job_id, lease_owner=owner, status=ReplayJobStatus.RUNNING
                ).update(**p, lease_until=timezone.now() + timedelta(seconds=LEASE_S))
            )
            if not renewed:
                # Cancel asked (save the progress, then stop) or the lease was lost.
                cancelled = bool(
                    _db_retry(
                        lambda p=progress: ReplayJob.objects.filter(  # type: ignore[misc]
                            pk=job_id, lease_owner=owner, status=ReplayJobStatus.CANCELLING
                        ).update(**p)
                    )
                )
                if not cancelled:
                    return None  # another runner owns the job now and continues it
            if job.rate_limit:
                pause = len(batch) / job.rate_limit - (time.monotonic() - started)
                if pause > 0:
                    time.sleep(pause)
                cancelled = (
                    ReplayJob.objects.filter(pk=job_id, status=ReplayJobStatus.CANCELLING).exists()
                    or cancelled
                )
        if cancelled and cursor < len(ids):
            final = ReplayJobStatus.CANCELLED
    except Exception as exc:
        error = redact_urls(f"{type(exc).__name__}: {exc}")  # shown on pages
        final = ReplayJobStatus.FAILED
    finally:
        if pool is not None:
            pool.shutdown(wait=True)
    _db_retry(
        lambda: ReplayJob.objects.filter(pk=job_id, lease_owner=owner).update(
            status=final,
            finished_at=timezone.now(),
            error=error,
            lease_owner="",
            lease_until=None,
        )
    )
    job.refresh_from_db()
    _db_retry(lambda: complete_job_audit(job))
    return job
