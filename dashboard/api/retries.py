"""JSON twins of the retry browser.

- ``GET /api/v1/clusters/<c>/retries``: the visible topics with their retry counts
  (latest snapshot).
- ``GET /api/v1/clusters/<c>/topics/<t>/retries``: a page of items by due time;
  ``state`` (all, due, scheduled), ``order`` (asc, desc), ``key``, ``text``,
  ``partition``, ``limit`` (1..500), ``cursor`` (a page's ``next_cursor``) or ``offset``
  (unfiltered lists).
- ``POST .../retries/retry`` and ``.../retries/delete`` body ``{"ids": ["<id>", ...]}``
  or ``{"all_matching": true, "filter": {"state": "due", "key": "k", ...}, "cursor": ...}``
  with ``"reason"`` (required to delete and for more than one item) and, to delete all
  matching, ``"confirm": "<topic>"``; Operator. The answer counts what was done and
  whether more items match (``more``, ``next_cursor``).
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import URLPattern, path

from dashboard.api.auth import ApiParamError, api_view
from dashboard.body import Body
from dashboard.permissions import Action
from dashboard.ratelimits import RETRY_FILTERS, rate_limited
from dashboard.selectors.retries import retries_overview_get, retries_page_get
from dashboard.services import retries as svc
from dashboard.services.audit import origin_from_request

__all__ = ["urlpatterns"]

FILTER_FIELDS = ("state", "order", "key", "text", "partition")


@api_view("GET", action=Action.VIEW)
def retries(request: HttpRequest, cluster: str) -> HttpResponse:
    data = retries_overview_get(user=request.user, cluster=cluster)
    return JsonResponse({"cluster": cluster, **data})


@api_view("GET", action=Action.VIEW)
@rate_limited("browse", filters=RETRY_FILTERS)
def topic_retries(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    data = retries_page_get(user=request.user, cluster=cluster, topic=topic, query=request.GET)
    return JsonResponse({"cluster": cluster, **data})


def _act(request: HttpRequest, cluster: str, topic: str, action: str) -> HttpResponse:
    body = Body(request)
    raw = body.data.get("filter", {})
    if not isinstance(raw, dict):
        raise ApiParamError("filter must be an object")
    flt = {k: raw[k] for k in FILTER_FIELDS if raw.get(k) is not None}
    for name, value in flt.items():
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise ApiParamError(f"filter.{name} must be a string")
    result = svc.retries_act(
        acting_user=request.user,
        cluster=cluster,
        topic=topic,
        action=action,
        ids=body.texts("ids"),
        all_matching=body.flag("all_matching"),
        filters=flt,
        cursor=body.text("cursor") or None,
        reason=body.text("reason"),
        confirm=body.text("confirm"),
        origin=origin_from_request(request),
    )
    return JsonResponse({"cluster": cluster, **result})


@api_view("POST")
def topic_retries_retry(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    return _act(request, cluster, topic, "retry")


@api_view("POST")
def topic_retries_delete(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    return _act(request, cluster, topic, "delete")


BASE = "api/v1/clusters/<str:cluster>/topics/<str:topic>/retries"
urlpatterns: list[URLPattern] = [
    path("api/v1/clusters/<str:cluster>/retries", retries, name="api-retries"),
    path(BASE, topic_retries, name="api-topic-retries"),
    path(BASE + "/retry", topic_retries_retry, name="api-topic-retries-retry"),
    path(BASE + "/delete", topic_retries_delete, name="api-topic-retries-delete"),
]
