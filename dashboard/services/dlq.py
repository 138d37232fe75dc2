"""Dead-letter writes: replay one, bulk replay jobs, delete, purge, export.

Every function follows the same order (ARCHITECTURE.md): permission check ->
audit intent row (outcome "unknown") -> mqcore call (atomic Lua) -> audit
outcome row. Replays are idempotent in Redis (replay records), so a double
click, a retried request or a resumed job never replays a letter twice unless
an admin forces it.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from django.conf import settings
from django.db import OperationalError
from django.db.models import Q
from django.utils import timezone

from dashboard.clusters import cluster_client, cluster_config
from dashboard.models import AuditEventType, ReplayJob, ReplayJobStatus
from dashboard.permissions import Action, require_action
from dashboard.services.audit import (
    Origin,
    audit_begin,
    audit_complete,
    audit_failure,
    require_reason,
)

if TYPE_CHECKING:
    from mqcore.dlq import DeadLetters
    from mqcore.models import ReplayResult

__all__ = [
    "BulkSelection",
    "ConfirmationError",
    "dead_letters",
    "dlq_bulk_cancel",
    "dlq_bulk_preview",
    "dlq_bulk_start",
    "dlq_delete",
    "dlq_export",
    "dlq_purge",
    "dlq_replay",
    "replay_job_run",
]

LANES = 2  # concurrent replay_many calls of an unthrottled job (disjoint ids)
CHUNK = 10_000  # letters per progress commit (replay_many runs them as Lua batches of 100)
# A runner renews its job lease at every chunk (<= 1 s of work); a dead one loses it after this.
LEASE_S = float(settings.DLQ_JOB_LEASE_S)
MAX_BULK = int(settings.DLQ_BULK_MAX_LETTERS)


T = TypeVar("T")


class ConfirmationError(ValueError):
    """Raised when a destructive action's typed confirmation does not match."""


def dead_letters(cluster: str) -> DeadLetters:
    from mqcore.dlq import DeadLetters

    return DeadLetters(cluster_config(cluster), client=cluster_client(cluster))


def _replay_event(force: bool, target: bool) -> AuditEventType:
    if target:
        return AuditEventType.DLQ_REPLAY_TARGET
    return AuditEventType.DLQ_REPLAY_FORCED if force else AuditEventType.DLQ_REPLAY


def _require_replay(
    acting_user: Any,
    cluster: str,
    topic: str,
    *,
    force: bool,
    target_topic: str | None,
    target_partition: int | None,
) -> None:
    require_action(acting_user, Action.REPLAY, cluster=cluster, topic=topic)
    if force:
        require_action(acting_user, Action.FORCE, cluster=cluster, topic=topic)
    if target_topic or target_partition is not None:
        require_action(acting_user, Action.REPLAY_TARGET, cluster=cluster, topic=topic)
        if target_topic:
            require_action(acting_user, Action.REPLAY, cluster=cluster, topic=target_topic)


def dlq_replay(
    *,
    acting_user: Any,
    cluster: str,
    topic: str,
    dlq_id: str,
    reason: str = "",
    force: bool = False,
    target_topic: str | None = None,
    target_partition: int | None = None,
    origin: Origin | None = None,
) -> ReplayResult:
    """Replay one letter (to its original partition unless an admin names a target).

    Already replayed letters are a no-op (``replayed=False``, reason
    "already-replayed") unless ``force``; the audit outcome is the result's reason.
    """
    _require_replay(
        acting_user,
        cluster,
        topic,
        force=force,
        target_topic=target_topic,
        target_partition=target_partition,
    )
    target = bool(target_topic) or target_partition is not None
    if force or target:
        reason = require_reason(reason)
    intent = audit_begin(
        acting_user=acting_user,
        event_type=_replay_event(force, target),
        origin=origin,
        cluster=cluster,
        topic=topic,
        letter_ids=[dlq_id],
        reason=reason,
        detail={"force": force, "target_topic": target_topic, "target_partition": target_partition},
    )
    with audit_failure(intent):
        result = dead_letters(cluster).replay(
            topic,
            dlq_id,
            by=acting_user.get_username(),
            force=force,
            target_topic=target_topic or None,
            target_partition=target_partition,
        )
    audit_complete(
        intent,
        outcome=result.reason,
        counts={"replayed": int(result.replayed)},
        detail={"new_id": result.new_id, "topic": result.topic, "partition": result.partition},
    )
    return result


def dlq_delete(
    *,
    acting_user: Any,
    cluster: str,
    topic: str,
    dlq_id: str,
    reason: str,
    origin: Origin | None = None,
) -> bool:
    """Delete one letter (admin). Returns False when it was already gone."""
    require_action(acting_user, Action.DELETE, cluster=cluster, topic=topic)
    reason = require_reason(reason)
    intent = audit_begin(
        acting_user=acting_user,
        event_type=AuditEventType.DLQ_DELETE,
        origin=origin,
        cluster=cluster,
        topic=topic,
        letter_ids=[dlq_id],
        reason=reason,
    )
    with audit_failure(intent):
        deleted = dead_letters(cluster).delete(topic, dlq_id)
    audit_complete(
        intent, outcome="deleted" if deleted else "missing", counts={"deleted": int(deleted)}
    )
    return bool(deleted)


def dlq_purge(
    *,
    acting_user: Any,
    cluster: str,
    topic: str,
    confirm: str,
    reason: str,
    origin: Origin | None = None,
) -> int:
    """Purge a topic's whole DLQ (admin); ``confirm`` must be the topic name typed again."""
    require_action(acting_user, Action.PURGE, cluster=cluster, topic=topic)
    reason = require_reason(reason)
    if (confirm or "").strip() != topic:
        raise ConfirmationError("type the topic name exactly to confirm the purge")
    intent = audit_begin(
        acting_user=acting_user,
        event_type=AuditEventType.DLQ_PURGE,
        origin=origin,
        cluster=cluster,
        topic=topic,
        reason=reason,
    )
    with audit_failure(intent):
        removed = dead_letters(cluster).purge(topic)
    audit_complete(intent, outcome="purged", counts={"deleted": int(removed)})
    return int(removed)


def dlq_export(
    *, acting_user: Any, cluster: str, topic: str, ids: list[str], origin: Origin | None = None
) -> list[dict[str, Any]]:
    """The selected letters as JSON-ready dicts (payloads masked for whom they must be)."""
    from dashboard.permissions import payload_visible

    require_action(acting_user, Action.VIEW, cluster=cluster, topic=topic)
    ids = [i for i in dict.fromkeys(ids) if i][:MAX_EXPORT]
    visible = payload_visible(acting_user, cluster, topic)
    intent = audit_begin(
        acting_user=acting_user,
        event_type=AuditEventType.DLQ_EXPORT,
        origin=origin,
        cluster=cluster,
        topic=topic,
        letter_ids=ids,
        detail={"masked": not visible},
    )
    dlq = dead_letters(cluster)
    out: list[dict[str, Any]] = []
    from mqcore.errors import UnknownMessageError

    for dlq_id in ids:
        try:
            letter = dlq.get(topic, dlq_id)
        except UnknownMessageError:
            continue
        data = asdict(letter)
        data.pop("payload_bytes", None)
        if letter.payload_bytes is not None:
            data["payload_hex"] = letter.payload_bytes.hex()
        if not visible:
            data["payload"] = MASK
            data.pop("payload_hex", None)
        out.append(data)
    audit_complete(intent, outcome="exported", counts={"exported": len(out)})
    return out


MASK = "••• masked (sensitive topic) •••"
MAX_EXPORT = 1000


# --- bulk replay ------------------------------------------------------------------------------


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
    *,
    acting_user: Any,
    cluster: str,
    topic: str,
    selection: BulkSelection,
    force: bool = False,
    target_topic: str | None = None,
    target_partition: int | None = None,
) -> ReplayJob:
    """Freeze the set into a draft job ("N letters, ids A..B"); nothing is replayed yet."""
    _require_replay(
        acting_user,
        cluster,
        topic,
        force=force,
        target_topic=target_topic,
        target_partition=target_partition,
    )
    if selection.ids:
        ids = list(dict.fromkeys(i for i in selection.ids if i))[:MAX_BULK]
    else:
        ids = dead_letters(cluster).ids_matching(
            topic,
            partition=selection.partition,
            key=selection.key,
            text=selection.text,
            since_ms=selection.since_ms,
            until_ms=selection.until_ms,
            max_ids=MAX_BULK,
        )
    if not ids:
        raise ValueError("no letters match: nothing to replay")
    text = "\n".join(ids)
    return ReplayJob.objects.create(
        cluster=cluster,
        topic=topic,
        created_by=acting_user,
        reason="",
        filters=selection.filters(),
        frozen_ids=text,
        frozen_hash=hashlib.sha256(text.encode()).hexdigest(),
        total=len(ids),
        first_id=ids[0],
        last_id=ids[-1],
        force=force,
        target_topic=target_topic or "",
        target_partition=target_partition,
        status=ReplayJobStatus.DRAFT,
    )


def frozen_set_ref(job: ReplayJob) -> str:
    ids = f"{job.first_id}..{job.last_id}"
    return f"job:{job.id} sha256:{job.frozen_hash[:16]} n={job.total} ids {ids}"


def dlq_bulk_start(
    *,
    acting_user: Any,
    job: ReplayJob,
    reason: str,
    ticket: str = "",
    rate_limit: int = 0,
    origin: Origin | None = None,
    enqueue: bool = True,
) -> ReplayJob:
    """Start a previewed job (reason or ticket required); a second start is a no-op."""
    _require_replay(
        acting_user,
        job.cluster,
        job.topic,
        force=job.force,
        target_topic=job.target_topic or None,
        target_partition=job.target_partition,
    )
    reason = require_reason(reason, ticket)
    if rate_limit < 0:
        raise ValueError("rate limit must be >= 0 letters per second")
    if job.status != ReplayJobStatus.DRAFT:
        return job
    intent = audit_begin(
        acting_user=acting_user,
        event_type=AuditEventType.DLQ_BULK_REPLAY,
        origin=origin,
        cluster=job.cluster,
        topic=job.topic,
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
            "filters": job.filters,
        },
    )
    started = ReplayJob.objects.filter(pk=job.pk, status=ReplayJobStatus.DRAFT).update(
        status=ReplayJobStatus.QUEUED,
        reason=reason,
        ticket=ticket,
        rate_limit=rate_limit,
        audit_event_id=intent.pk,
    )
    if not started:
        audit_complete(intent, outcome="already-started")
        job.refresh_from_db()
        return job
    job.refresh_from_db()
    if enqueue:
        from dashboard.tasks.replay import run_replay_job

        try:
            run_replay_job.delay(str(job.pk))
        except Exception as exc:
            ReplayJob.objects.filter(pk=job.pk).update(
                status=ReplayJobStatus.FAILED, error=f"could not enqueue: {exc}"
            )
            audit_complete(intent, outcome="failed", detail={"error": str(exc)[:300]})
            raise
    return job


def dlq_bulk_cancel(*, acting_user: Any, job: ReplayJob, origin: Origin | None = None) -> ReplayJob:
    """Ask a running job to stop at its next chunk (a queued or draft one stops at once)."""
    require_action(acting_user, Action.REPLAY, cluster=job.cluster, topic=job.topic)
    intent = audit_begin(
        acting_user=acting_user,
        event_type=AuditEventType.DLQ_BULK_CANCEL,
        origin=origin,
        cluster=job.cluster,
        topic=job.topic,
        frozen_set=frozen_set_ref(job),
        detail={"job": str(job.id)},
    )
    now = timezone.now()
    stopped = ReplayJob.objects.filter(
        pk=job.pk, status__in=[ReplayJobStatus.DRAFT, ReplayJobStatus.QUEUED], cursor=0
    ).update(status=ReplayJobStatus.CANCELLED, finished_at=now)
    if not stopped:
        ReplayJob.objects.filter(pk=job.pk, status=ReplayJobStatus.RUNNING).update(
            status=ReplayJobStatus.CANCELLING
        )
    job.refresh_from_db()
    audit_complete(intent, outcome=str(job.status))
    if stopped and job.audit_event_id:
        _complete_job_audit(job)
    return job


# --- the runner (called by the Celery task) -----------------------------------------------------


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


def _complete_job_audit(job: ReplayJob) -> None:
    from dashboard.models import AuditEvent

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
    dlq = dead_letters(job.cluster)
    ids = job.ids()
    tag = job.runner_tag
    by = f"{job.created_by.get_username() if job.created_by else 'system'} ({tag})"
    cursor, replayed, skipped, failed = job.cursor, job.replayed, job.skipped, job.failed
    chunk = CHUNK if not job.rate_limit else max(1, min(CHUNK, job.rate_limit))
    error = ""
    final = ReplayJobStatus.COMPLETED
    pool = ThreadPoolExecutor(LANES, thread_name_prefix="replay") if not job.rate_limit else None
    try:
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
        error = f"{type(exc).__name__}: {exc}"
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
    _db_retry(lambda: _complete_job_audit(job))
    return job


def job_progress(job: ReplayJob) -> dict[str, Any]:
    """The JSON-friendly progress of a job (also used by the page's progress partial)."""
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


def to_json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, default=str)
