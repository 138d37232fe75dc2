"""JSON API of bulk replay jobs: preview (a frozen draft), progress, start and cancel.

- ``POST /api/v1/clusters/<c>/topics/<t>/dlq/bulk`` body ``{"ids": [...]}`` or
  ``{"all": true, "partition", "key", "text", "since", "until"}`` plus ``force``,
  ``target_topic``, ``target_partition``: freezes the set into a draft job (201) with
  the dry run of its first letters; nothing is replayed yet (Operator)
- ``GET  .../dlq/jobs/<uuid>`` the job, its progress and, for a draft, the dry run
- ``POST .../dlq/jobs/<uuid>/start`` body ``{"reason", "ticket", "rate_limit"}`` (Operator)
- ``POST .../dlq/jobs/<uuid>/cancel`` (Operator)
"""

from __future__ import annotations

from dataclasses import asdict, is_dataclass
from typing import Any
from uuid import UUID

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404
from django.urls import URLPattern, path

from dashboard.api.auth import api_view
from dashboard.body import Body
from dashboard.models import ReplayJob, ReplayJobStatus
from dashboard.permissions import Action
from dashboard.selectors import dlq as sel
from dashboard.services import bulk_replay as bulk
from dashboard.services import replay_runner as runner
from dashboard.services.audit import origin_from_request

__all__ = ["urlpatterns"]

DRY_RUN_ROWS = 50
FILTER_FIELDS = ("partition", "key", "text", "since", "until")


def _job(cluster: str, topic: str, job_id: UUID) -> ReplayJob:
    return get_object_or_404(ReplayJob, pk=job_id, cluster=cluster, topic=topic)


def _plan(job: ReplayJob) -> list[dict[str, Any]]:
    rows = []
    for item in bulk.dry_run_plan(job, DRY_RUN_ROWS):
        plain = is_dataclass(item) and not isinstance(item, type)
        rows.append(asdict(item) if plain else dict(item))
    return rows


def job_json(job: ReplayJob, user: Any) -> dict[str, Any]:
    """The job as the API answers ``user``: what was frozen, by whom, and its progress."""
    data: dict[str, Any] = {
        **runner.job_progress(job),
        "cluster": job.cluster,
        "topic": job.topic,
        "filters": bulk.job_filters(job, user),
        "first_id": job.first_id,
        "last_id": job.last_id,
        "force": job.force,
        "target_topic": job.target_topic or None,
        "target_partition": job.target_partition,
        "reason": job.reason,
        "active": job.active,
        "created_at": job.created_at,
    }
    if job.status == ReplayJobStatus.DRAFT:
        data["plan"] = _plan(job)
        data["plan_more"] = max(0, job.total - DRY_RUN_ROWS)
    return data


def _selection(body: Body) -> bulk.BulkSelection:
    if body.flag("all"):
        raw: dict[str, str] = {}
        for name in FILTER_FIELDS:
            value = body.data.get(name)
            if isinstance(value, int) and not isinstance(value, bool):
                value = str(value)
            if value is not None and not isinstance(value, str):
                raise ValueError(f"{name} must be a string or an integer")
            raw[name] = value or ""
        filters = sel.DlqFilters.from_query(raw)
        return bulk.BulkSelection(
            partition=filters.partition,
            key=filters.key,
            text=filters.text,
            since_ms=filters.since_ms,
            until_ms=filters.until_ms,
        )
    ids = tuple(body.texts("ids"))
    if not ids:
        raise ValueError('ids: select letters, or "all": true to replay all matching the filter')
    return bulk.BulkSelection(ids=ids)


@api_view("POST", action=Action.REPLAY)
def bulk_preview(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    body = Body(request)
    job = bulk.dlq_bulk_preview(
        acting_user=request.user,
        cluster=cluster,
        topic=topic,
        selection=_selection(body),
        force=body.flag("force"),
        target_topic=body.text("target_topic").strip() or None,
        target_partition=body.number("target_partition"),
    )
    return JsonResponse(job_json(job, request.user), status=201)


@api_view("GET", action=Action.VIEW)
def job_detail(request: HttpRequest, cluster: str, topic: str, job_id: UUID) -> HttpResponse:
    return JsonResponse(job_json(_job(cluster, topic, job_id), request.user))


@api_view("POST", action=Action.VIEW)
def job_start(request: HttpRequest, cluster: str, topic: str, job_id: UUID) -> HttpResponse:
    job = _job(cluster, topic, job_id)
    body = Body(request)
    rate_limit = body.number("rate_limit") or 0
    job = bulk.dlq_bulk_start(
        acting_user=request.user,
        job=job,
        reason=body.text("reason"),
        ticket=body.text("ticket").strip(),
        rate_limit=rate_limit,
        origin=origin_from_request(request),
    )
    return JsonResponse(job_json(job, request.user))


@api_view("POST", action=Action.VIEW)
def job_cancel(request: HttpRequest, cluster: str, topic: str, job_id: UUID) -> HttpResponse:
    job = _job(cluster, topic, job_id)
    job = bulk.dlq_bulk_cancel(
        acting_user=request.user, job=job, origin=origin_from_request(request)
    )
    return JsonResponse(job_json(job, request.user))


T = "api/v1/clusters/<str:cluster>/topics/<str:topic>/dlq"
J = T + "/jobs/<uuid:job_id>"
urlpatterns: list[URLPattern] = [
    path(T + "/bulk", bulk_preview, name="api-dlq-bulk-preview"),
    path(J, job_detail, name="api-dlq-job"),
    path(J + "/start", job_start, name="api-dlq-job-start"),
    path(J + "/cancel", job_cancel, name="api-dlq-job-cancel"),
]
