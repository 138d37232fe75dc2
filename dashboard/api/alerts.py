"""JSON API of the alerts area: twins of the alerts page, same permissions.

- ``GET  /api/v1/alerts`` open alerts (``?cluster=``), each with ``mute`` (the
  silence or acknowledgement that applies, or null)
- ``POST /api/v1/alerts/mute`` JSON ``{"cluster", "alert", "kind": "silence"|"ack",
  "duration": "15m"|"1h"|..., "reason"}`` (Admin of the alert's topic; an alert that
  names no topic: an Admin without topic scope)
- ``POST /api/v1/alerts/unmute`` JSON ``{"cluster", "alert", "reason"}`` (the same)
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import URLPattern, path

from dashboard.api.auth import ApiParamError, api_view
from dashboard.body import Body
from dashboard.clusters import cluster_names
from dashboard.permissions import Action, require_action_somewhere
from dashboard.selectors.alerts import alerts_get
from dashboard.services import alert_mutes as svc
from dashboard.services.audit import origin_from_request


@api_view("GET", action=Action.VIEW)
def alert_list(request: HttpRequest) -> HttpResponse:
    cluster = request.GET.get("cluster") or None
    if cluster is not None and cluster not in cluster_names():
        raise ApiParamError(f"unknown cluster {cluster[:100]!r}")
    data = alerts_get(cluster, user=request.user)
    return JsonResponse({"alerts": data["open"], "now_ms": data["now_ms"]})


@api_view("POST")
def alert_mute(request: HttpRequest) -> HttpResponse:
    require_action_somewhere(request.user, Action.SILENCE)  # the alert's topic: the service
    body = Body(request)
    mute = svc.alert_mute(
        acting_user=request.user,
        cluster=body.text("cluster"),
        alert_id=body.text("alert"),
        kind=body.text("kind", "silence"),
        duration=body.text("duration"),
        reason=body.text("reason"),
        origin=origin_from_request(request),
    )
    return JsonResponse({"mute": mute})


@api_view("POST")
def alert_unmute(request: HttpRequest) -> HttpResponse:
    require_action_somewhere(request.user, Action.SILENCE)  # the alert's topic: the service
    body = Body(request)
    svc.alert_unmute(
        acting_user=request.user,
        cluster=body.text("cluster"),
        alert_id=body.text("alert"),
        reason=body.text("reason"),
        origin=origin_from_request(request),
    )
    return JsonResponse({"lifted": body.text("alert")})


urlpatterns: list[URLPattern] = [
    path("api/v1/alerts", alert_list, name="api-alerts"),
    path("api/v1/alerts/mute", alert_mute, name="api-alert-mute"),
    path("api/v1/alerts/unmute", alert_unmute, name="api-alert-unmute"),
]
