"""Dead-letter pages and their operator actions (replay, delete, purge, export, bulk replay).

Reads go through :mod:`dashboard.selectors.dlq`, writes through the services
(permission -> audit -> mqcore). Every write is POST + CSRF; a button a role
cannot use is not rendered (``can`` in the context) and the service refuses
it anyway (403).
"""

from __future__ import annotations

from dataclasses import asdict, is_dataclass
from typing import Any
from uuid import UUID

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import URLPattern, path
from django.views.decorators.http import require_GET, require_POST

from dashboard.body import Body
from dashboard.models import ReplayJob, ReplayJobStatus
from dashboard.permissions import Action, actions_for, can_map
from dashboard.ratelimits import DLQ_FILTERS, rate_limited
from dashboard.selectors import dlq as sel
from dashboard.services import bulk_replay as bulk
from dashboard.services import replay_runner as runner
from dashboard.services.audit import origin_from_request
from dashboard.views.errors import page_guard
from dashboard.views.htmx import HtmxHttpRequest, render_page

DRY_RUN_ROWS = 50


def _can(request: HttpRequest, cluster: str, topic: str) -> dict[str, bool]:
    return can_map(actions_for(request.user, cluster=cluster, topic=topic))


@require_GET
@login_required
@page_guard(Action.VIEW)
@rate_limited("browse", filters=DLQ_FILTERS)
def dlq_list(request: HtmxHttpRequest, cluster: str, topic: str) -> HttpResponse:
    filters = sel.DlqFilters.from_query(request.GET)
    before = request.GET.get("before") or None
    page = sel.dlq_page_get(
        user=request.user, cluster=cluster, topic=topic, filters=filters, before=before
    )
    context = {
        "cluster": cluster,
        "topic": topic,
        "page": page,
        "filters": filters,
        "before": before,
        "can": _can(request, cluster, topic),
        "jobs": ReplayJob.objects.filter(cluster=cluster, topic=topic).exclude(
            status=ReplayJobStatus.DRAFT
        )[:5],
    }
    return render_page(request, "dashboard/dlq.html", context, region="letters")


@require_POST
@login_required
@page_guard()
def dlq_bulk_preview(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    form = Body.form(request)
    if form.flag("all"):
        filters = sel.DlqFilters.from_query(request.POST)
        selection = bulk.BulkSelection(
            partition=filters.partition,
            key=filters.key,
            text=filters.text,
            since_ms=filters.since_ms,
            until_ms=filters.until_ms,
        )
    else:
        ids = tuple(form.texts("id"))
        if not ids:
            raise ValueError("select letters, or replay all matching the filter")
        selection = bulk.BulkSelection(ids=ids)
    job = bulk.dlq_bulk_preview(
        acting_user=request.user,
        cluster=cluster,
        topic=topic,
        selection=selection,
        force=form.flag("force"),
        target_topic=form.text("target_topic").strip() or None,
        target_partition=form.number("target_partition"),
    )
    return redirect("dashboard:dlq-job", cluster=cluster, topic=topic, job_id=job.pk)


def _job(cluster: str, topic: str, job_id: UUID) -> ReplayJob:
    return get_object_or_404(ReplayJob, pk=job_id, cluster=cluster, topic=topic)


def plan_label(reason: str, topic: str, partition: int | None) -> str:
    """What the dry run says a letter would do, in words (``reason`` is the script's code)."""
    where = f"{topic}/p{partition}" if partition is not None and partition >= 0 else topic
    labels = {
        "would-replay": f"will replay to {where}",
        "already-replayed": "skip: already replayed",
        "missing": "skip: no longer in the DLQ",
    }
    return labels.get(reason, reason.replace("-", " "))


def _plan_rows(job: ReplayJob) -> list[dict[str, Any]]:
    plan = bulk.dry_run_plan(job, DRY_RUN_ROWS)
    rows: list[dict[str, Any]] = []
    for item in plan:
        data = asdict(item) if is_dataclass(item) and not isinstance(item, type) else dict(item)
        data["label"] = plan_label(
            str(data.get("reason", "")), str(data.get("topic", "")), data.get("partition")
        )
        rows.append(data)
    return rows


@require_GET
@login_required
@page_guard(Action.VIEW)
def dlq_job(request: HttpRequest, cluster: str, topic: str, job_id: UUID) -> HttpResponse:
    job = _job(cluster, topic, job_id)
    context: dict[str, Any] = {
        "cluster": cluster,
        "topic": topic,
        "job": job,
        "job_filters": bulk.job_filters(job, request.user),
        "progress": runner.job_progress(job),
        "can": _can(request, cluster, topic),
    }
    if job.status == ReplayJobStatus.DRAFT:
        context["plan"] = _plan_rows(job)
        context["plan_more"] = max(0, job.total - DRY_RUN_ROWS)
        return render(request, "dashboard/dlq_bulk.html", context)
    return render(request, "dashboard/replay_job.html", context)


@require_GET
@login_required
@page_guard(Action.VIEW)
def dlq_job_progress(
    request: HtmxHttpRequest, cluster: str, topic: str, job_id: UUID
) -> HttpResponse:
    job = _job(cluster, topic, job_id)
    context = {"cluster": cluster, "topic": topic, "job": job, "progress": runner.job_progress(job)}
    context["can"] = _can(request, cluster, topic)
    response = render(request, "dashboard/replay_job.html#progress", context)
    if not job.active and request.htmx:
        response.status_code = 286  # htmx: stop polling
    return response


@require_POST
@login_required
@page_guard(Action.VIEW)
def dlq_job_start(request: HttpRequest, cluster: str, topic: str, job_id: UUID) -> HttpResponse:
    job = _job(cluster, topic, job_id)
    form = Body.form(request)
    bulk.dlq_bulk_start(
        acting_user=request.user,
        job=job,
        reason=form.text("reason"),
        ticket=form.text("ticket").strip(),
        rate_limit=form.number("rate_limit") or 0,
        origin=origin_from_request(request),
    )
    return redirect("dashboard:dlq-job", cluster=cluster, topic=topic, job_id=job.pk)


@require_POST
@login_required
@page_guard(Action.VIEW)
def dlq_job_cancel(request: HttpRequest, cluster: str, topic: str, job_id: UUID) -> HttpResponse:
    job = _job(cluster, topic, job_id)
    bulk.dlq_bulk_cancel(acting_user=request.user, job=job, origin=origin_from_request(request))
    return redirect("dashboard:dlq-job", cluster=cluster, topic=topic, job_id=job.pk)


J = "clusters/<str:cluster>/topics/<str:topic>/dlq/jobs/<uuid:job_id>/"
urlpatterns: list[URLPattern] = [
    path("clusters/<str:cluster>/topics/<str:topic>/dlq/", dlq_list, name="dlq"),
    path(
        "clusters/<str:cluster>/topics/<str:topic>/dlq/bulk/",
        dlq_bulk_preview,
        name="dlq-bulk-preview",
    ),
    path(J, dlq_job, name="dlq-job"),
    path(J + "progress/", dlq_job_progress, name="dlq-job-progress"),
    path(J + "start/", dlq_job_start, name="dlq-job-start"),
    path(J + "cancel/", dlq_job_cancel, name="dlq-job-cancel"),
]
