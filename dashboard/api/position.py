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
from dashboard.body import Body
from dashboard.permissions import Action
from dashboard.selectors import position as sel
from dashboard.services import position as svc
from dashboard.services.audit import origin_from_request


def _target(body: Body) -> dict[str, Any]:
    """The move's ``target`` and ``partitions``, as the selector and the service take them."""
    target = body.data.get("target")
    if not isinstance(target, dict) or not isinstance(target.get("kind"), str):
        raise ApiParamError('target: {"kind": "latest|earliest|time|id", "value": ...}')
    value = target.get("value")
    if value is not None and (isinstance(value, bool) or not isinstance(value, str | int)):
        raise ApiParamError("target.value must be a string or an integer")
    partitions = body.data.get("partitions", "all")
    if partitions != "all" and not isinstance(partitions, list):
        raise ApiParamError('partitions: a list of numbers or "all"')
    return {"kind": target["kind"], "value": value, "partitions": partitions}


@api_view("POST", action=Action.SET_POSITION)
def position_plan(request: HttpRequest, cluster: str, topic: str, group: str) -> HttpResponse:
    plan = sel.position_plan_get(
        user=request.user, cluster=cluster, topic=topic, group=group, **_target(Body(request))
    )
    return JsonResponse(plan)


@api_view("POST", action=Action.SET_POSITION)
def position_move(request: HttpRequest, cluster: str, topic: str, group: str) -> HttpResponse:
    body = Body(request)
    target = _target(body)
    result = svc.set_group_position(
        acting_user=request.user,
        cluster=cluster,
        topic=topic,
        group=group,
        **target,
        reason=body.text("reason"),
        confirm=body.text("confirm"),
        origin=origin_from_request(request),
        force=body.flag("force"),
    )
    return JsonResponse(result)


BASE = "api/v1/clusters/<str:cluster>/topics/<str:topic>/groups/<str:group>/position"
urlpatterns: list[URLPattern] = [
    path(BASE + "/plan", position_plan, name="api-group-position-plan"),
    path(BASE, position_move, name="api-group-position"),
]
