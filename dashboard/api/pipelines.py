"""JSON twins of the checkpoints pages: ``/api/v1/clusters/<c>/pipelines[/<name>]``."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.urls import path

from dashboard.api.auth import ApiParamError, api_view
from dashboard.permissions import Action
from dashboard.selectors import pipelines as sel

__all__ = ["urlpatterns"]

MAX_LIMIT = 200


def _int(request: HttpRequest, name: str, default: int | None) -> int | None:
    raw = request.GET.get(name, "")
    if raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ApiParamError(f"{name} must be an integer") from None
    if value < 0:
        raise ApiParamError(f"{name} must be >= 0")
    return value


@api_view("GET", action=Action.VIEW)
def pipelines_api(request: HttpRequest, cluster: str) -> HttpResponse:
    rows = sel.pipeline_list(cluster=cluster, user=request.user)
    return JsonResponse({"cluster": cluster, "pipelines": rows})


@api_view("GET", action=Action.VIEW)
def pipeline_api(request: HttpRequest, cluster: str, name: str) -> HttpResponse:
    limit = _int(request, "limit", sel.HISTORY_PAGE) or sel.HISTORY_PAGE
    if limit > MAX_LIMIT:
        raise ApiParamError(f"limit must be <= {MAX_LIMIT}")
    before = _int(request, "before", None)
    data = sel.pipeline_get(
        cluster=cluster, pipeline=name, user=request.user, before=before, limit=limit
    )
    if data is None:
        raise Http404(f"unknown pipeline {name!r}")
    return JsonResponse({"cluster": cluster, "pipeline": name, **data})


urlpatterns = [
    path("api/v1/clusters/<str:cluster>/pipelines", pipelines_api, name="api-pipelines"),
    path(
        "api/v1/clusters/<str:cluster>/pipelines/<str:name>",
        pipeline_api,
        name="api-pipeline-detail",
    ),
]
