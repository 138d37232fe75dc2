"""API twins of the export buttons: ``GET .../lag/export``, ``.../pending/export``,
``.../dlq/export-all`` with the pages' filters and ``format=csv|json`` (default csv),
``max_rows`` up to ``EXPORT_MAX_ROWS``. Streamed, bounded, audited, masked as the pages.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, path

from dashboard.api.auth import api_view
from dashboard.ratelimits import count_request
from dashboard.services.exports import check_same_origin, export_download

__all__ = ["urlpatterns"]


def _export(kind: str, request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    check_same_origin(request)  # refused before it counts against the user's exports
    count_request(request, "export")
    return export_download(request, kind, cluster, topic)  # type: ignore[return-value]


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
