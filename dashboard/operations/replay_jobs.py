"""Bulk replay jobs: a preview freezes the letters into a draft with a dry run; nothing
is replayed until the job is started; a cancelled job stops at its next chunk."""

from __future__ import annotations

from typing import Annotated, Any

from django.http import HttpResponse
from django.shortcuts import get_object_or_404, render

from dashboard.models import ReplayJob
from dashboard.operations.declare import Api, Call, NoInput, Operation, Page, Reason, doc, route
from dashboard.operations.dlq import Filters, Force, Partition, TargetTopic, ids_form
from dashboard.permissions import Action
from dashboard.selectors import replay_jobs as sel
from dashboard.services import bulk_replay as bulk

__all__ = ["OPERATIONS"]

PAGE = route("dlq")
JOB = PAGE + "jobs/<uuid:job_id>/"


class Bulk(Filters):
    """The letters (``ids``, or ``all`` matching the filter fields) and where to."""

    ids: Annotated[list[str], doc("letter ids, or")] = []
    all: Annotated[bool, doc("every letter matching the filter")] = False
    force: Force = False
    target_topic: TargetTopic = ""
    target_partition: Partition | None = None


class Start(Reason):
    """Why (or a ticket), and how fast."""

    ticket: Annotated[str, doc("ticket reference (instead of a reason)")] = ""
    rate_limit: Annotated[int, doc("letters per second, 0 = none")] = 0


def _preview(c: Call[Bulk]) -> ReplayJob:
    i = c.input
    if not i.all and not i.ids:
        raise ValueError('ids: select letters, or "all": true to replay all matching the filter')
    chosen = bulk.BulkSelection(**i.read().kwargs()) if i.all else bulk.BulkSelection(tuple(i.ids))
    return bulk.dlq_bulk_preview(
        acting_user=c.user,
        cluster=c.cluster,
        topic=c.topic,
        selection=chosen,
        force=i.force,
        target_topic=i.target_topic.strip() or None,
        target_partition=i.target_partition,
    )


def _job(c: Call[Any]) -> ReplayJob:
    return get_object_or_404(ReplayJob, pk=c.url["job_id"], cluster=c.cluster, topic=c.topic)


def _start(c: Call[Start]) -> ReplayJob:
    return bulk.dlq_bulk_start(
        acting_user=c.user,
        job=_job(c),
        reason=c.input.reason,
        ticket=c.input.ticket.strip(),
        rate_limit=c.input.rate_limit,
        origin=c.origin,
    )


def _json(c: Call[Any], job: ReplayJob) -> dict[str, Any]:
    return sel.replay_job_get(job, c.user).json()


def _page(c: Call[NoInput], job: ReplayJob) -> HttpResponse:
    view = sel.replay_job_get(job, c.user)
    page = "replay_job" if view.plan is None else "dlq_bulk"
    return render(c.request, f"dashboard/{page}.html", {**c.url, "can": c.can, **view.context()})


def _progress(c: Call[NoInput], job: ReplayJob) -> HttpResponse:
    context = {**c.url, "job": job, "progress": sel.job_progress(job), "can": c.can}
    response = render(c.request, "dashboard/replay_job.html#progress", context)
    if not job.active and getattr(c.request, "htmx", False):
        response.status_code = 286  # htmx: stop polling
    return response


def _to_job(c: Call[Any], job: ReplayJob) -> HttpResponse:
    return c.to("dlq-job", **{**c.url, "job_id": job.pk})


OPERATIONS = (
    Operation(
        "Freeze letters into a draft bulk replay job (201) with its dry run",
        "replay jobs",
        Action.REPLAY,
        Bulk,
        _preview,
        page=Page("dlq-bulk-preview", PAGE + "bulk/", "POST", form=ids_form, answer=_to_job),
        api=Api(status=201, answer=_json),
    ),
    Operation(
        "A bulk replay job: progress, and the dry run of a draft",
        "replay jobs",
        Action.VIEW,
        run=_job,
        page=Page("dlq-job", JOB, answer=_page),
        pages=(Page("dlq-job-progress", JOB + "progress/", answer=_progress),),
        api=Api(answer=_json),
    ),
    Operation(
        "Start a previewed job",
        "replay jobs",
        Action.REPLAY,
        Start,
        _start,
        page=Page("dlq-job-start", JOB + "start/", "POST", answer=_to_job),
        api=Api(answer=_json),
    ),
    Operation(
        "Cancel a job (stops at its next chunk)",
        "replay jobs",
        Action.REPLAY,
        run=lambda c: bulk.dlq_bulk_cancel(acting_user=c.user, job=_job(c), origin=c.origin),
        page=Page("dlq-job-cancel", JOB + "cancel/", "POST", answer=_to_job),
        api=Api(answer=_json),
    ),
)
