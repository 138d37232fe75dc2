"""API twins of the export buttons: ``GET .../lag/export``, ``.../pending/export``,
``.../dlq/export-all`` with the pages' filters and ``format=csv|json`` (default csv),
``max_rows`` up to ``EXPORT_MAX_ROWS``. Streamed, bounded, audited, masked as the pages.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, path

from dashboard.api.auth import api_view
from dashboard.clusters import cluster_config
from dashboard.services.audit import origin_from_request
from dashboard.services.exports import export_response, export_start

__all__ = ["urlpatterns"]


def _export(kind: str, request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    cluster_config(cluster)
    export = export_start(
        acting_user=request.user,
        kind=kind,
        cluster=cluster,
        topic=topic,
        query=request.GET,
        origin=origin_from_request(request),
    )
    return export_response(export)  # type: ignore[return-value]


@api_view("GET")
def lag_export(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    return _export("lag", request, cluster, topic)


@api_view("GET")
def pending_export(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    return _export("pending", request, cluster, topic)


@api_view("GET")
def dlq_export_all(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    return _export("dlq", request, cluster, topic)


T = "api/v1/clusters/<str:cluster>/topics/<str:topic>"
urlpatterns: list[URLPattern] = [
    path(f"{T}/lag/export", lag_export, name="api-lag-export"),
    path(f"{T}/pending/export", pending_export, name="api-pending-export"),
    path(f"{T}/dlq/export-all", dlq_export_all, name="api-dlq-export-all"),
]
