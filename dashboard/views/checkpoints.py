"""Checkpoints pages (after Flink's checkpoint tab): pipeline list and pipeline detail.

Views call :mod:`dashboard.selectors.pipelines` only. The live region of each
page is a template partial that htmx polls.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.urls import path
from django.views.decorators.http import require_GET

from dashboard.permissions import Action
from dashboard.selectors import pipelines as sel
from dashboard.selectors.pages.snapshot import now_ms
from dashboard.views.errors import page_guard
from dashboard.views.htmx import HtmxHttpRequest, render_page


def _before(request: HtmxHttpRequest) -> int | None:
    raw = request.GET.get("before", "")
    if not raw:
        return None
    try:
        value = int(raw)
    except ValueError:
        return None
    return value if value >= 0 else None


def _render(request: HtmxHttpRequest, template: str, context: dict[str, Any]) -> HttpResponse:
    context.setdefault("poll_seconds", settings.PIPELINES_POLL_S)
    return render_page(request, template, context, region="live")


@require_GET
@login_required
@page_guard(Action.VIEW)
def pipeline_list(request: HtmxHttpRequest, cluster: str) -> HttpResponse:
    rows = sel.pipeline_list(cluster=cluster, user=request.user)
    context = {"cluster": cluster, "pipelines": rows, "now_ms": now_ms()}
    return _render(request, "dashboard/pipelines.html", context)


@require_GET
@login_required
@page_guard(Action.VIEW)
def pipeline_detail(request: HtmxHttpRequest, cluster: str, name: str) -> HttpResponse:
    data = sel.pipeline_get(
        cluster=cluster, pipeline=name, user=request.user, before=_before(request)
    )
    if data is None:
        raise Http404(f"unknown pipeline {name!r}")
    return _render(
        request,
        "dashboard/pipeline.html",
        {"cluster": cluster, "name": name, "p": data, "before": _before(request)},
    )


urlpatterns = [
    path("clusters/<str:cluster>/pipelines/", pipeline_list, name="pipelines"),
    path("clusters/<str:cluster>/pipelines/<str:name>/", pipeline_detail, name="pipeline-detail"),
]
