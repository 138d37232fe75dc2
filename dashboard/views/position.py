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
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_GET, require_POST

from dashboard.clusters import cluster_config
from dashboard.permissions import Action, require_action
from dashboard.selectors import position as sel
from dashboard.services import position as svc
from dashboard.services.audit import origin_from_request
from dashboard.views.errors import html_errors
from dashboard.views.htmx import HtmxHttpRequest

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
@html_errors
def position_page(request: HttpRequest, cluster: str, topic: str, group: str) -> HttpResponse:
    cluster_config(cluster)
    require_action(request.user, Action.SET_POSITION, cluster=cluster, topic=topic)
    return render(
        request, "dashboard/position.html", _context(cluster, topic, group, _form(request.GET))
    )


@require_GET
@login_required
@html_errors
def position_plan(request: HtmxHttpRequest, cluster: str, topic: str, group: str) -> HttpResponse:
    cluster_config(cluster)
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
    name = "dashboard/position.html#plan" if request.htmx else "dashboard/position.html"
    response = render(request, name, context)
    patch_vary_headers(response, ("HX-Request",))
    return response


@require_POST
@login_required
@html_errors
def position_move(request: HttpRequest, cluster: str, topic: str, group: str) -> HttpResponse:
    cluster_config(cluster)
    form = _form(request.POST)
    result = svc.set_group_position(
        acting_user=request.user,
        cluster=cluster,
        topic=topic,
        group=group,
        kind=form["kind"],
        value=form["value"],
        partitions=form["partitions"],
        reason=request.POST.get("reason", ""),
        confirm=request.POST.get("confirm", ""),
        origin=origin_from_request(request),
        force=request.POST.get("force") == "1",
    )
    context = {**_context(cluster, topic, group, form), "result": result}
    return render(request, "dashboard/position.html", context)


BASE = "clusters/<str:cluster>/topics/<str:topic>/groups/<str:group>/position/"
urlpatterns: list[URLPattern] = [
    path(BASE, position_page, name="group-position"),
    path(BASE + "plan/", position_plan, name="group-position-plan"),
    path(BASE + "move/", position_move, name="group-position-move"),
]
