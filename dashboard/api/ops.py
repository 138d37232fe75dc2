"""JSON twins of the collectors page and the audit chain check.

- ``GET  /api/v1/collectors`` the collector's last pass per visible cluster
- ``GET  /api/v1/audit/verify`` the audit chain check (cached like the page's)
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import URLPattern, path

from dashboard.api.auth import api_view
from dashboard.permissions import Action
from dashboard.selectors.collectors import collector_rows
from dashboard.services.audit import audit_verify_cached

__all__ = ["urlpatterns"]


@api_view("GET", action=Action.VIEW)
def collectors(request: HttpRequest) -> HttpResponse:
    return JsonResponse(
        {"collectors": collector_rows(request.user), "interval_s": settings.COLLECT_INTERVAL_S}
    )


@api_view("GET", action=Action.VIEW)
def audit_verify(request: HttpRequest) -> HttpResponse:
    report, checked_at = audit_verify_cached()
    return JsonResponse(
        {
            "intact": report.intact,
            "checked": report.checked,
            "first_broken_id": report.first_broken_id,
            "problem": report.problem,
            "unsigned": report.unsigned,
            "summary": str(report),
            "checked_at": checked_at,
        }
    )


urlpatterns: list[URLPattern] = [
    path("api/v1/collectors", collectors, name="api-collectors"),
    path("api/v1/audit/verify", audit_verify, name="api-audit-verify"),
]
