"""JSON API of group position moves (Admin only): the dry run and the move.

- ``POST /api/v1/clusters/<c>/topics/<t>/groups/<g>/position/plan`` body
  ``{"target": {"kind": "latest|earliest|time|id", "value": ...}, "partitions": [0, 2] | "all"}``
- ``POST /api/v1/clusters/<c>/topics/<t>/groups/<g>/position`` the same body plus
  ``"reason"`` and ``"confirm"`` (the group name), and ``"force": true`` to move a group a
  pipeline moves (refused with 409 and the reason otherwise; the plan's ``pipelines`` names
  them); answers like ``mqcore group set-position --json``
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import URLPattern, path

from dashboard.api.auth import ApiParamError, api_view
from dashboard.api.body import Body
from dashboard.clusters import cluster_config
from dashboard.permissions import Action, require_action
from dashboard.selectors import position as sel
from dashboard.services import position as svc
from dashboard.services.audit import origin_from_request


def _body(request: HttpRequest) -> dict[str, Any]:
    data = Body(request).data
    target = data.get("target")
    if not isinstance(target, dict) or not isinstance(target.get("kind"), str):
        raise ApiParamError('target: {"kind": "latest|earliest|time|id", "value": ...}')
    value = target.get("value")
    if value is not None and (isinstance(value, bool) or not isinstance(value, str | int)):
        raise ApiParamError("target.value must be a string or an integer")
    partitions = data.get("partitions", "all")
    if partitions != "all" and not isinstance(partitions, list):
        raise ApiParamError('partitions: a list of numbers or "all"')
    return {"kind": target["kind"], "value": value, "partitions": partitions, "raw": data}


@api_view("POST")
def position_plan(request: HttpRequest, cluster: str, topic: str, group: str) -> HttpResponse:
    cluster_config(cluster)
    require_action(request.user, Action.SET_POSITION, cluster=cluster, topic=topic)
    body = _body(request)
    plan = sel.position_plan_get(
        user=request.user,
        cluster=cluster,
        topic=topic,
        group=group,
        kind=body["kind"],
        value=body["value"],
        partitions=body["partitions"],
    )
    return JsonResponse(plan)


@api_view("POST")
def position_move(request: HttpRequest, cluster: str, topic: str, group: str) -> HttpResponse:
    cluster_config(cluster)
    require_action(request.user, Action.SET_POSITION, cluster=cluster, topic=topic)
    body = _body(request)
    reason, confirm = body["raw"].get("reason", ""), body["raw"].get("confirm", "")
    if not isinstance(reason, str) or not isinstance(confirm, str):
        raise ApiParamError("reason and confirm must be strings")
    force = body["raw"].get("force", False)
    if not isinstance(force, bool):
        raise ApiParamError("force must be true or false")
    result = svc.set_group_position(
        acting_user=request.user,
        cluster=cluster,
        topic=topic,
        group=group,
        kind=body["kind"],
        value=body["value"],
        partitions=body["partitions"],
        reason=reason,
        confirm=confirm,
        origin=origin_from_request(request),
        force=force,
    )
    return JsonResponse(result)


BASE = "api/v1/clusters/<str:cluster>/topics/<str:topic>/groups/<str:group>/position"
urlpatterns: list[URLPattern] = [
    path(BASE + "/plan", position_plan, name="api-group-position-plan"),
    path(BASE, position_move, name="api-group-position"),
]
