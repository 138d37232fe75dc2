"""JSON twins of the retention tab.

- ``GET /api/v1/clusters/<c>/topics/<t>/retention``: the view with the cluster's rules,
  or a what-if with ``maxlen``, ``max_age`` (e.g. ``7d``), ``consumed=1`` and
  ``ignore_groups`` (comma-separated); ``page`` (32 partitions a page).
- ``POST /api/v1/clusters/<c>/topics/<t>/retention/trim`` body ``{"maxlen": 1000000,
  "max_age": "7d", "consumed": true, "ignore_groups": ["old"], "reason": "...",
  "confirm": "<topic>"}`` (rules optional: the cluster's); Admin (purge permission).
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import URLPattern, path

from dashboard.api.auth import api_view
from dashboard.body import Body
from dashboard.permissions import Action
from dashboard.selectors.pages.params import parse_int
from dashboard.selectors.retention import policy_from_form, retention_get
from dashboard.services import retention as svc
from dashboard.services.audit import origin_from_request

__all__ = ["urlpatterns"]


@api_view("GET", action=Action.VIEW)
def retention(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    page = parse_int(request.GET.get("page"), "page", default=1, minimum=1, maximum=100_000)
    data = retention_get(
        user=request.user,
        cluster=cluster,
        topic=topic,
        policy=policy_from_form(request.GET),
        page=page or 1,
    )
    return JsonResponse(data)


@api_view("POST", action=Action.VIEW)
def retention_trim(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    body = Body(request)
    rules = {
        "maxlen": body.number("maxlen"),
        "max_age": body.text("max_age"),
        "consumed": body.flag("consumed"),
        "ignore_groups": body.texts("ignore_groups"),
    }
    result = svc.trim_topic(
        acting_user=request.user,
        cluster=cluster,
        topic=topic,
        policy=policy_from_form(rules),
        reason=body.text("reason"),
        confirm=body.text("confirm"),
        origin=origin_from_request(request),
    )
    return JsonResponse(result)


BASE = "api/v1/clusters/<str:cluster>/topics/<str:topic>/retention"
urlpatterns: list[URLPattern] = [
    path(BASE, retention, name="api-topic-retention"),
    path(BASE + "/trim", retention_trim, name="api-topic-retention-trim"),
]
