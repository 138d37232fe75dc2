"""A topic's dead letters: the list (filtered, paged by a cursor), one letter, and the
writes (replay, delete, purge, export); the page's forms post the JSON's fields (``ids``
repeated). Then bulk replay jobs: a preview freezes the letters into a draft with a dry run;
nothing is replayed until the job is started; a cancelled job stops at its next chunk."""

from __future__ import annotations

import json
import re
from typing import Annotated, Any

import msgspec
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils.http import content_disposition_header

from dashboard.models import ReplayJob
from dashboard.operations.declare import Api, Call, NoInput, Operation, Page, Reason, doc, route
from dashboard.permissions import Action
from dashboard.ratelimits import DLQ_FILTERS, rate_limited
from dashboard.selectors import dlq as sel
from dashboard.selectors import replay_jobs as jobs_sel
from dashboard.services import bulk_replay as bulk
from dashboard.services import dlq as svc

__all__ = ["OPERATIONS", "export_disposition"]

PAGE = r"^clusters/(?P<cluster>[^/]+)/topics/(?P<topic>[^/]+)/dlq/"
LETTER = PAGE + r"(?P<dlq_id>\d{1,20}-\d{1,20})/"
DLQ = route("dlq")  # the same, as a route: the jobs' pages
JOB = DLQ + "jobs/<uuid:job_id>/"
REPLAYED = ("replayed", "new_id", "topic", "partition", "reason")
_UNSAFE_FILENAME = re.compile(r"[^A-Za-z0-9._-]")
Partition = Annotated[int, doc("replay to another partition (Admin)", ge=0)]
Force = Annotated[bool, doc("replay even when already replayed")]
TargetTopic = Annotated[str, doc("replay to another topic (Admin)")]
Text = str | int  # a filter field: text (JSON: or a number)


class Filters(msgspec.Struct):
    """Letters whose fields match (all given)."""

    text: Annotated[Text, doc("payload text contains")] = ""
    partition: Annotated[Text, doc("source partition")] = ""
    key: Annotated[Text, doc("message key")] = ""
    since: Annotated[Text, doc("dead-lettered at or after (epoch ms or ISO)")] = ""
    until: Annotated[Text, doc("dead-lettered before (epoch ms or ISO)")] = ""

    def read(self) -> sel.DlqFilters:
        return sel.DlqFilters.from_query(
            {f: str(getattr(self, f)) for f in Filters.__struct_fields__}
        )


class Letters(Filters):
    """The filters, and a page: newest first, ``before`` the cursor."""

    before: Annotated[str, doc("cursor (next_cursor)")] = ""
    limit: Annotated[int, doc("page size (1..200)", ge=1, le=200)] = 50


class Replay(Reason):
    """Why, and where to (another topic or partition: Admin)."""

    force: Force = False
    target_topic: TargetTopic = ""
    target_partition: Partition | None = None


class Purge(Reason):
    """The topic name typed again, and why."""

    confirm: Annotated[str, doc("the topic name, typed again")] = ""


class Export(msgspec.Struct):
    """The letters to export."""

    ids: Annotated[list[str], doc("letter ids")] = []


def _letters(c: Call[Letters]) -> Any:
    return sel.dlq_page_get(
        user=c.user,
        cluster=c.cluster,
        topic=c.topic,
        filters=c.input.read(),
        before=c.input.before or None,
        limit=c.input.limit,
    )


def _letter(c: Call[Any], d: dict[str, Any]) -> dict[str, Any]:
    return {"cluster": c.cluster, "topic": c.topic, **d, "letter": sel.letter_json(d["letter"])}


def _target(i: Replay | Bulk) -> svc.ReplayTarget:
    return svc.ReplayTarget(i.force, i.target_topic.strip() or None, i.target_partition)


def _replay(c: Call[Replay]) -> Any:
    dlq_id, why = c.url["dlq_id"], c.input.reason
    return svc.dlq_replay(c.actor, dlq_id=dlq_id, reason=why, target=_target(c.input))


def _replayed_page(c: Call[Replay], r: Any) -> HttpResponse:
    if getattr(c.request, "htmx", False):
        context = {"result": r, "cluster": c.cluster, "topic": c.topic}
        return render(c.request, "dashboard/partials/replay_result.html", context)
    if not r.replayed:
        return c.back(f"Not replayed: {r.reason}.", "dlq-letter", *c.url, info=True)
    text = f"Replayed {c.url['dlq_id']} as {r.new_id} to {r.topic} p{r.partition}."
    return c.back(text, "dlq-letter", *c.url)


def _deleted_page(c: Call[Reason], deleted: bool) -> HttpResponse:
    letter = c.url["dlq_id"]
    return c.back(f"Deleted {letter}." if deleted else f"{letter} was already gone.", "dlq")


def export_disposition(topic: str) -> str:
    """``attachment; filename="dlq-TOPIC.json"`` from the topic's safe characters only
    (topic names are ``[A-Za-z0-9._-]``; anything else becomes ``_``), properly quoted."""
    safe = _UNSAFE_FILENAME.sub("_", topic)[:200] or "topic"
    return content_disposition_header(True, f"dlq-{safe}.json") or "attachment"


def _exported(c: Call[Export], letters: list[dict[str, Any]]) -> dict[str, Any]:
    return {"cluster": c.cluster, "topic": c.topic, "letters": letters}


def _export_file(c: Call[Export], letters: list[dict[str, Any]]) -> HttpResponse:
    body = json.dumps(_exported(c, letters), indent=2, default=str)
    response = HttpResponse(body, content_type="application/json")
    response["Content-Disposition"] = export_disposition(c.topic)
    return response


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
    return bulk.dlq_bulk_preview(c.actor, selection=chosen, target=_target(i))


def _job(c: Call[Any]) -> ReplayJob:
    return get_object_or_404(ReplayJob, pk=c.url["job_id"], cluster=c.cluster, topic=c.topic)


def _start(c: Call[Start]) -> ReplayJob:
    i = c.input
    job = _job(c)
    return bulk.dlq_bulk_start(
        c.actor, job=job, reason=i.reason, ticket=i.ticket.strip(), rate_limit=i.rate_limit
    )


def _json(c: Call[Any], job: ReplayJob) -> dict[str, Any]:
    return jobs_sel.replay_job_get(job, c.user).json()


def _job_page(c: Call[NoInput], job: ReplayJob) -> HttpResponse:
    view = jobs_sel.replay_job_get(job, c.user)
    page = "replay_job" if view.plan is None else "dlq_bulk"
    return render(c.request, f"dashboard/{page}.html", {**c.url, "can": c.can, **view.context()})


def _progress(c: Call[NoInput], job: ReplayJob) -> HttpResponse:
    context = {**c.url, "job": job, "progress": jobs_sel.job_progress(job), "can": c.can}
    response = render(c.request, "dashboard/replay_job.html#progress", context)
    if not job.active and getattr(c.request, "htmx", False):
        response.status_code = 286  # htmx: stop polling
    return response


def _to_job(c: Call[Any], job: ReplayJob) -> HttpResponse:
    return c.to("dlq-job", **{**c.url, "job_id": job.pk})


OPERATIONS = (
    Operation(
        "Dead letters, newest first",
        "dlq",
        Action.VIEW,
        Letters,
        _letters,
        page=Page(
            "dlq",
            PAGE + "$",
            template="dashboard/dlq.html#letters",
            context=lambda c, page: {**page.context(), "can": c.can},
        ),
        api=Api(answer=lambda c, page: page.json()),
        decorators=(rate_limited("browse", filters=DLQ_FILTERS),),
    ),
    Operation(
        "One dead letter with its replay history and follow-ups",
        "dlq",
        Action.VIEW,
        run=lambda c: sel.dlq_letter_get(**c.read()),
        page=Page(
            "dlq-letter",
            LETTER + "$",
            template="dashboard/dlq_letter.html",
            context=lambda c, d: {"can": c.can, **d},
        ),
        api=Api(answer=_letter, loose=True),
    ),
    Operation(
        "Replay one letter",
        "dlq",
        Action.REPLAY,
        Replay,
        _replay,
        page=Page("dlq-replay", LETTER + "replay/$", "POST", answer=_replayed_page),
        api=Api(answer=lambda c, r: {k: getattr(r, k) for k in REPLAYED}),
        early=False,
    ),
    Operation(
        "Delete one letter",
        "dlq",
        Action.DELETE,
        Reason,
        lambda c: svc.dlq_delete(**c.write()),
        page=Page("dlq-delete", LETTER + "delete/$", "POST", answer=_deleted_page),
        api=Api(answer=lambda c, deleted: {"id": c.url["dlq_id"], "deleted": deleted}),
        early=False,
    ),
    Operation(
        "Purge the topic's whole DLQ",
        "dlq",
        Action.PURGE,
        Purge,
        lambda c: svc.dlq_purge(**c.write()),
        page=Page(
            "dlq-purge",
            PAGE + "purge/$",
            "POST",
            back=("Purged {result} letters from the DLQ of {topic}.", "dlq"),
        ),
        api=Api(answer=lambda c, n: {"topic": c.topic, "purged": n}),
        early=False,
    ),
    Operation(
        "Export letters as JSON (audited)",
        "dlq",
        Action.VIEW,
        Export,
        lambda c: svc.dlq_export(**c.write()),
        page=Page("dlq-export", PAGE + "export/$", "POST", answer=_export_file),
        api=Api(answer=_exported, loose=True),
        decorators=(rate_limited("export"),),
    ),
    Operation(
        "Freeze letters into a draft bulk replay job (201) with its dry run",
        "replay jobs",
        Action.REPLAY,
        Bulk,
        _preview,
        page=Page("dlq-bulk-preview", DLQ + "bulk/", "POST", answer=_to_job),
        api=Api(status=201, answer=_json),
    ),
    Operation(
        "A bulk replay job: progress, and the dry run of a draft",
        "replay jobs",
        Action.VIEW,
        run=_job,
        page=Page("dlq-job", JOB, answer=_job_page),
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
        run=lambda c: bulk.dlq_bulk_cancel(c.actor, job=_job(c)),
        page=Page("dlq-job-cancel", JOB + "cancel/", "POST", answer=_to_job),
        api=Api(answer=_json),
    ),
)
