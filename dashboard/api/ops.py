"""JSON twin of the collectors page: ``GET /api/v1/collectors``."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import URLPattern, path

from dashboard.api.auth import api_view
from dashboard.permissions import Action
from dashboard.selectors.collectors import collector_rows

__all__ = ["urlpatterns"]


@api_view("GET", action=Action.VIEW)
def collectors(request: HttpRequest) -> HttpResponse:
    return JsonResponse(
        {"collectors": collector_rows(request.user), "interval_s": settings.COLLECT_INTERVAL_S}
    )


urlpatterns: list[URLPattern] = [
    path("api/v1/collectors", collectors, name="api-collectors"),
]
