"""Dead-letter pages and their operator actions (replay, delete, purge, export, bulk replay).

Reads go through :mod:`dashboard.selectors.dlq`, writes through the services
(permission -> audit -> mqcore). Every write is POST + CSRF; a button a role
cannot use is not rendered (``can`` in the context) and the service refuses
it anyway (403).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, is_dataclass
from typing import Any
from uuid import UUID

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import URLPattern, path, re_path
from django.utils.cache import patch_vary_headers
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_GET, require_POST

from dashboard.clusters import cluster_config
from dashboard.models import ReplayJob, ReplayJobStatus
from dashboard.permissions import Action, actions_for, can_map, require_action
from dashboard.ratelimits import DLQ_FILTERS, rate_limited
from dashboard.selectors import dlq as sel
from dashboard.services import bulk_replay as bulk
from dashboard.services import dlq as svc
from dashboard.services import replay_runner as runner
from dashboard.services.audit import origin_from_request
from dashboard.views.errors import html_errors
from dashboard.views.htmx import HtmxHttpRequest

DRY_RUN_ROWS = 50
ID_RE = r"(?P<dlq_id>\d{1,20}-\d{1,20})"
BASE = r"^clusters/(?P<cluster>[^/]+)/topics/(?P<topic>[^/]+)/"


def _check_topic(request: HttpRequest, cluster: str, topic: str) -> set[Action]:
    cluster_config(cluster)
    require_action(request.user, Action.VIEW, cluster=cluster, topic=topic)
    return actions_for(request.user, cluster=cluster, topic=topic)


def _can(actions: set[Action]) -> dict[str, bool]:
    return can_map(actions)


def _int_or_none(raw: str | None, name: str) -> int | None:
    raw = (raw or "").strip()
    if not raw:
        return None
    if not raw.isdigit():
        raise ValueError(f"{name}: a number >= 0")
    return int(raw)


def _flag(raw: str | None) -> bool:
    return (raw or "") in ("1", "on", "true", "yes")


@require_GET
@login_required
@html_errors
@rate_limited("browse", filters=DLQ_FILTERS)
def dlq_list(request: HtmxHttpRequest, cluster: str, topic: str) -> HttpResponse:
    actions = _check_topic(request, cluster, topic)
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
        "can": _can(actions),
        "jobs": ReplayJob.objects.filter(cluster=cluster, topic=topic).exclude(
            status=ReplayJobStatus.DRAFT
        )[:5],
    }
    name = "dashboard/dlq.html#letters" if request.htmx else "dashboard/dlq.html"
    response = render(request, name, context)
    patch_vary_headers(response, ("HX-Request",))
    return response


@require_GET
@login_required
@html_errors
def dlq_letter(request: HttpRequest, cluster: str, topic: str, dlq_id: str) -> HttpResponse:
    actions = _check_topic(request, cluster, topic)
    data = sel.dlq_letter_get(user=request.user, cluster=cluster, topic=topic, dlq_id=dlq_id)
    return render(
        request,
        "dashboard/dlq_letter.html",
        {"cluster": cluster, "topic": topic, "can": _can(actions), **data},
    )


_UNSAFE_FILENAME = re.compile(r"[^A-Za-z0-9._-]")


@require_POST
@login_required
@html_errors
def dlq_replay(request: HtmxHttpRequest, cluster: str, topic: str, dlq_id: str) -> HttpResponse:
    cluster_config(cluster)
    target_topic = request.POST.get("target_topic", "").strip() or None
    target_partition = _int_or_none(request.POST.get("target_partition"), "target partition")
    result = svc.dlq_replay(
        acting_user=request.user,
        cluster=cluster,
        topic=topic,
        dlq_id=dlq_id,
        reason=request.POST.get("reason", ""),
        force=_flag(request.POST.get("force")),
        target_topic=target_topic,
        target_partition=target_partition,
        origin=origin_from_request(request),
    )
    if request.htmx:
        return render(
            request,
            "dashboard/partials/replay_result.html",
            {"result": result, "cluster": cluster, "topic": topic},
        )
    if result.replayed:
        messages.success(
            request, f"Replayed {dlq_id} as {result.new_id} to {result.topic} p{result.partition}."
        )
    else:
        messages.info(request, f"Not replayed: {result.reason}.")
    return redirect("dashboard:dlq-letter", cluster=cluster, topic=topic, dlq_id=dlq_id)


@require_POST
@login_required
@html_errors
def dlq_delete(request: HttpRequest, cluster: str, topic: str, dlq_id: str) -> HttpResponse:
    cluster_config(cluster)
    deleted = svc.dlq_delete(
        acting_user=request.user,
        cluster=cluster,
        topic=topic,
        dlq_id=dlq_id,
        reason=request.POST.get("reason", ""),
        origin=origin_from_request(request),
    )
    messages.success(request, f"Deleted {dlq_id}." if deleted else f"{dlq_id} was already gone.")
    return redirect("dashboard:dlq", cluster=cluster, topic=topic)


@require_POST
@login_required
@html_errors
def dlq_purge(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    cluster_config(cluster)
    removed = svc.dlq_purge(
        acting_user=request.user,
        cluster=cluster,
        topic=topic,
        confirm=request.POST.get("confirm", ""),
        reason=request.POST.get("reason", ""),
        origin=origin_from_request(request),
    )
    messages.success(request, f"Purged {removed} letters from the DLQ of {topic}.")
    return redirect("dashboard:dlq", cluster=cluster, topic=topic)


@require_POST
@login_required
@html_errors
def dlq_export(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    cluster_config(cluster)
    ids = request.POST.getlist("id")
    if not ids:
        raise ValueError("select at least one letter to export")
    letters = svc.dlq_export(
        acting_user=request.user,
        cluster=cluster,
        topic=topic,
        ids=ids,
        origin=origin_from_request(request),
    )
    body = json.dumps(
        {"cluster": cluster, "topic": topic, "letters": letters}, indent=2, default=str
    )
    response = HttpResponse(body, content_type="application/json")
    response["Content-Disposition"] = export_disposition(topic)
    return response


def export_disposition(topic: str) -> str:
    """``attachment; filename="dlq-TOPIC.json"`` from the topic's safe characters only
    (topic names are ``[A-Za-z0-9._-]``; anything else becomes ``_``), properly quoted."""
    safe = _UNSAFE_FILENAME.sub("_", topic)[:200] or "topic"
    return content_disposition_header(True, f"dlq-{safe}.json") or "attachment"


@require_POST
@login_required
@html_errors
def dlq_bulk_preview(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    cluster_config(cluster)
    if _flag(request.POST.get("all")):
        filters = sel.DlqFilters.from_query(request.POST)
        selection = bulk.BulkSelection(
            partition=filters.partition,
            key=filters.key,
            text=filters.text,
            since_ms=filters.since_ms,
            until_ms=filters.until_ms,
        )
    else:
        ids = tuple(request.POST.getlist("id"))
        if not ids:
            raise ValueError("select letters, or replay all matching the filter")
        selection = bulk.BulkSelection(ids=ids)
    job = bulk.dlq_bulk_preview(
        acting_user=request.user,
        cluster=cluster,
        topic=topic,
        selection=selection,
        force=_flag(request.POST.get("force")),
        target_topic=request.POST.get("target_topic", "").strip() or None,
        target_partition=_int_or_none(request.POST.get("target_partition"), "target partition"),
    )
    return redirect("dashboard:dlq-job", cluster=cluster, topic=topic, job_id=job.pk)


def _job(request: HttpRequest, cluster: str, topic: str, job_id: UUID) -> ReplayJob:
    _check_topic(request, cluster, topic)
    job = get_object_or_404(ReplayJob, pk=job_id, cluster=cluster, topic=topic)
    return job


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
@html_errors
def dlq_job(request: HttpRequest, cluster: str, topic: str, job_id: UUID) -> HttpResponse:
    job = _job(request, cluster, topic, job_id)
    actions = actions_for(request.user, cluster=cluster, topic=topic)
    context: dict[str, Any] = {
        "cluster": cluster,
        "topic": topic,
        "job": job,
        "progress": runner.job_progress(job),
        "can": _can(actions),
    }
    if job.status == ReplayJobStatus.DRAFT:
        context["plan"] = _plan_rows(job)
        context["plan_more"] = max(0, job.total - DRY_RUN_ROWS)
        return render(request, "dashboard/dlq_bulk.html", context)
    return render(request, "dashboard/replay_job.html", context)


@require_GET
@login_required
@html_errors
def dlq_job_progress(
    request: HtmxHttpRequest, cluster: str, topic: str, job_id: UUID
) -> HttpResponse:
    job = _job(request, cluster, topic, job_id)
    context = {"cluster": cluster, "topic": topic, "job": job, "progress": runner.job_progress(job)}
    context["can"] = _can(actions_for(request.user, cluster=cluster, topic=topic))
    response = render(request, "dashboard/replay_job.html#progress", context)
    if not job.active and request.htmx:
        response.status_code = 286  # htmx: stop polling
    return response


@require_POST
@login_required
@html_errors
def dlq_job_start(request: HttpRequest, cluster: str, topic: str, job_id: UUID) -> HttpResponse:
    job = _job(request, cluster, topic, job_id)
    bulk.dlq_bulk_start(
        acting_user=request.user,
        job=job,
        reason=request.POST.get("reason", ""),
        ticket=request.POST.get("ticket", "").strip(),
        rate_limit=_int_or_none(request.POST.get("rate_limit"), "rate limit") or 0,
        origin=origin_from_request(request),
    )
    return redirect("dashboard:dlq-job", cluster=cluster, topic=topic, job_id=job.pk)


@require_POST
@login_required
@html_errors
def dlq_job_cancel(request: HttpRequest, cluster: str, topic: str, job_id: UUID) -> HttpResponse:
    job = _job(request, cluster, topic, job_id)
    bulk.dlq_bulk_cancel(acting_user=request.user, job=job, origin=origin_from_request(request))
    return redirect("dashboard:dlq-job", cluster=cluster, topic=topic, job_id=job.pk)


J = "clusters/<str:cluster>/topics/<str:topic>/dlq/jobs/<uuid:job_id>/"
urlpatterns: list[URLPattern] = [
    path("clusters/<str:cluster>/topics/<str:topic>/dlq/", dlq_list, name="dlq"),
    path("clusters/<str:cluster>/topics/<str:topic>/dlq/purge/", dlq_purge, name="dlq-purge"),
    path("clusters/<str:cluster>/topics/<str:topic>/dlq/export/", dlq_export, name="dlq-export"),
    path(
        "clusters/<str:cluster>/topics/<str:topic>/dlq/bulk/",
        dlq_bulk_preview,
        name="dlq-bulk-preview",
    ),
    path(J, dlq_job, name="dlq-job"),
    path(J + "progress/", dlq_job_progress, name="dlq-job-progress"),
    path(J + "start/", dlq_job_start, name="dlq-job-start"),
    path(J + "cancel/", dlq_job_cancel, name="dlq-job-cancel"),
    re_path(BASE + "dlq/" + ID_RE + "/$", dlq_letter, name="dlq-letter"),
    re_path(BASE + "dlq/" + ID_RE + "/replay/$", dlq_replay, name="dlq-replay"),
    re_path(BASE + "dlq/" + ID_RE + "/delete/$", dlq_delete, name="dlq-delete"),
]
