"""JSON twins of the topic message browser and of "produce a test message".

- ``GET /api/v1/clusters/<c>/topics/<t>/messages`` the browser (query string as the page's:
  ``partition, order, from_id, from_time, limit, max_scan, cursor, key, header, text,
  where, max_bytes``); answers like ``mqcore browse --json`` plus ``payload_masked``
- ``POST .../messages/produce`` body ``{"payload", "key", "headers": {name: value},
  "partition"}`` (Operator); answers like ``mqcore produce --json``

A filter that does not parse, or looks into data the role may not see -> 400.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import URLPattern, path

from dashboard.api.auth import ApiParamError, api_view
from dashboard.body import Body
from dashboard.permissions import Action
from dashboard.ratelimits import BROWSE_FILTERS, rate_limited
from dashboard.selectors.pages.browse import browse_get
from dashboard.services import produce as svc
from dashboard.services.audit import origin_from_request

__all__ = ["urlpatterns"]

LOOSE = {"default": str}


@api_view("GET", action=Action.VIEW)
@rate_limited("browse", filters=BROWSE_FILTERS)
def topic_browse(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    data = browse_get(cluster, topic, request.GET, user=request.user)
    return JsonResponse({"cluster": cluster, **data}, json_dumps_params=LOOSE)


@api_view("POST")
def topic_produce(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    body = Body(request)
    headers = body.data.get("headers") or {}
    if not isinstance(headers, dict):
        raise ApiParamError("headers must be an object of strings")
    sent = svc.produce_message(
        acting_user=request.user,
        cluster=cluster,
        topic=topic,
        payload=body.text("payload"),
        key=body.text("key") or None,
        headers=headers,
        partition=body.number("partition"),
        origin=origin_from_request(request),
    )
    return JsonResponse(sent, status=201)


BASE = "api/v1/clusters/<str:cluster>/topics/<str:topic>/messages"
urlpatterns: list[URLPattern] = [
    path(BASE, topic_browse, name="api-topic-browse"),
    path(BASE + "/produce", topic_produce, name="api-topic-produce"),
]
