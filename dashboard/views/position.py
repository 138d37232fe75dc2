"""The group position page: choose a target, dry run (htmx partial), confirm, move (Admin only).

Reads go through :mod:`dashboard.selectors.position`, the move through
:mod:`dashboard.services.position` (permission -> audit -> mqcore). Roles
without the action get 403 on every URL here; the topic page shows the link
only to users who can.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import URLPattern, path
from django.views.decorators.http import require_GET, require_POST

from dashboard.body import Body
from dashboard.permissions import Action
from dashboard.selectors import position as sel
from dashboard.services import position as svc
from dashboard.services.audit import origin_from_request
from dashboard.views.errors import page_guard
from dashboard.views.htmx import HtmxHttpRequest
from dashboard.views.pages import render_page

KINDS = ("earliest", "latest", "time", "id")


def _form(data: Any) -> dict[str, Any]:
    kind = data.get("kind", "") or "earliest"
    value = data.get(f"{kind}_value", "") if kind in ("time", "id") else ""
    scope = data.get("scope", "all")
    partitions = "all" if scope != "some" else data.get("partitions", "")
    return {"kind": kind, "value": value, "partitions": partitions, "scope": scope}


def _context(cluster: str, topic: str, group: str, form: dict[str, Any]) -> dict[str, Any]:
    return {"cluster": cluster, "topic": topic, "group": group, "form": form, "kinds": KINDS}


@require_GET
@login_required
@page_guard(Action.SET_POSITION)
def position_page(request: HttpRequest, cluster: str, topic: str, group: str) -> HttpResponse:
    return render(
        request, "dashboard/position.html", _context(cluster, topic, group, _form(request.GET))
    )


@require_GET
@login_required
@page_guard()
def position_plan(request: HtmxHttpRequest, cluster: str, topic: str, group: str) -> HttpResponse:
    form = _form(request.GET)
    plan = sel.position_plan_get(
        user=request.user,
        cluster=cluster,
        topic=topic,
        group=group,
        kind=form["kind"],
        value=form["value"],
        partitions=form["partitions"],
    )
    context = {**_context(cluster, topic, group, form), "plan": plan}
    return render_page(request, "dashboard/position.html", context, region="plan")


@require_POST
@login_required
@page_guard()
def position_move(request: HttpRequest, cluster: str, topic: str, group: str) -> HttpResponse:
    form, body = _form(request.POST), Body.form(request)
    result = svc.set_group_position(
        acting_user=request.user,
        cluster=cluster,
        topic=topic,
        group=group,
        kind=form["kind"],
        value=form["value"],
        partitions=form["partitions"],
        reason=body.text("reason"),
        confirm=body.text("confirm"),
        origin=origin_from_request(request),
        force=body.flag("force"),
    )
    context = {**_context(cluster, topic, group, form), "result": result}
    return render(request, "dashboard/position.html", context)


BASE = "clusters/<str:cluster>/topics/<str:topic>/groups/<str:group>/position/"
urlpatterns: list[URLPattern] = [
    path(BASE, position_page, name="group-position"),
    path(BASE + "plan/", position_plan, name="group-position-plan"),
    path(BASE + "move/", position_move, name="group-position-move"),
]
