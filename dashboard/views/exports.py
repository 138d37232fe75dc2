"""The export buttons of the topic (lag), pending and DLQ pages: "export all matching"
the page's filters as CSV or JSON (``?format=``), streamed, bounded and audited
(:mod:`dashboard.services.exports`). Viewers may export; masked data stays masked.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponseBase
from django.urls import URLPattern, path
from django.views.decorators.http import require_GET

from dashboard.ratelimits import count_request
from dashboard.services.exports import check_same_origin, export_download
from dashboard.views.errors import page_guard

__all__ = ["urlpatterns"]


def _export(kind: str, request: HttpRequest, cluster: str, topic: str) -> HttpResponseBase:
    check_same_origin(request)  # refused before it counts against the user's exports
    count_request(request, "export")
    return export_download(request, kind, cluster, topic)


@require_GET
@login_required
@page_guard()
def lag_export(request: HttpRequest, cluster: str, topic: str) -> HttpResponseBase:
    return _export("lag", request, cluster, topic)


@require_GET
@login_required
@page_guard()
def pending_export(request: HttpRequest, cluster: str, topic: str) -> HttpResponseBase:
    return _export("pending", request, cluster, topic)


@require_GET
@login_required
@page_guard()
def dlq_export_all(request: HttpRequest, cluster: str, topic: str) -> HttpResponseBase:
    return _export("dlq", request, cluster, topic)


T = "clusters/<str:cluster>/topics/<str:topic>"
urlpatterns: list[URLPattern] = [
    path(f"{T}/lag/export/", lag_export, name="lag-export"),
    path(f"{T}/pending/export/", pending_export, name="pending-export"),
    path(f"{T}/dlq/export-all/", dlq_export_all, name="dlq-export-all"),
]
