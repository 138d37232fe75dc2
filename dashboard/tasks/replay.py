"""Celery tasks of this area (thin: they call services).

``run_replay_job`` replays a bulk job's frozen set (``services.replay_runner.replay_job_run``).
When a worker starts, jobs left active by a crashed worker are queued again; the
job lease makes sure only one runner works on a job at a time, and the replay
records make the resumed run skip what the dead one already replayed, so the counts stay
exact after a crash.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from celery.signals import worker_ready

from dashboard.models import ReplayJob, ReplayJobStatus
from dashboard.services.bulk_replay import REPLAY_TASK
from dashboard.services.replay_runner import lease_wait_s, replay_job_run

__all__ = ["resume_interrupted_jobs", "run_replay_job"]

log = logging.getLogger(__name__)


@shared_task(name=REPLAY_TASK, acks_late=True)
def run_replay_job(job_id: str) -> str:
    job = replay_job_run(job_id=job_id)
    if job is None:
        # Another runner holds the lease; look again when it would have expired.
        wait = lease_wait_s(job_id)
        if wait > 0:
            run_replay_job.apply_async(args=(job_id,), countdown=wait + 0.5)
        return "busy"
    return str(job.status)


def resume_interrupted_jobs() -> list[str]:
    """Queue every active job again (each run waits for a dead runner's lease to expire)."""
    ids: list[str] = []
    for job_id in ReplayJob.objects.filter(
        status__in=[ReplayJobStatus.RUNNING, ReplayJobStatus.CANCELLING, ReplayJobStatus.QUEUED]
    ).values_list("id", flat=True):
        run_replay_job.apply_async(args=(str(job_id),), countdown=lease_wait_s(str(job_id)))
        ids.append(str(job_id))
    return ids


@worker_ready.connect
def _on_worker_ready(**kwargs: Any) -> None:
    try:
        resumed = resume_interrupted_jobs()
    except Exception:  # a worker must start even when the database is briefly away
        log.exception("could not resume interrupted replay jobs")
        return
    if resumed:
        log.info("resumed %d interrupted replay job(s)", len(resumed))
