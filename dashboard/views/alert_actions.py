"""Silence, acknowledge or lift an open alert: POST + CSRF forms of the alerts page.

Writes go through :mod:`dashboard.services.alert_mutes` (Admin only: other roles
get 403; bad input gets the 400 error page and writes nothing). Both redirect
back to the alerts page.
"""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect
from django.urls import URLPattern, path, reverse
from django.views.decorators.http import require_POST

from dashboard.services import alert_mutes as svc
from dashboard.services.audit import origin_from_request
from dashboard.views.errors import page_guard


def form_duration(post: QueryDict) -> str:
    """The chosen preset, or the custom duration when ``duration`` is ``custom``."""
    chosen = post.get("duration", "") or ""
    return (post.get("duration_custom", "") or "") if chosen == "custom" else chosen


def form_target(post: QueryDict) -> tuple[str, str]:
    """(cluster, alert id) from ``target`` (the page's JSON ``[cluster, id]``) or the
    ``cluster`` and ``alert`` fields."""
    raw = post.get("target", "")
    if not raw:
        return post.get("cluster", "") or "", post.get("alert", "") or ""
    try:
        cluster, alert_id = json.loads(raw)
    except (ValueError, TypeError):
        raise ValueError("choose an open alert") from None
    if not isinstance(cluster, str) or not isinstance(alert_id, str):
        raise ValueError("choose an open alert")
    return cluster, alert_id


def _back() -> HttpResponse:
    return redirect(reverse("dashboard:alerts"))


@require_POST
@login_required
@page_guard()
def alert_mute(request: HttpRequest) -> HttpResponse:
    kind = request.POST.get("kind", "silence")
    cluster, alert_id = form_target(request.POST)
    mute = svc.alert_mute(
        acting_user=request.user,
        cluster=cluster,
        alert_id=alert_id,
        kind=kind,
        duration=form_duration(request.POST),
        reason=request.POST.get("reason", ""),
        origin=origin_from_request(request),
    )
    done = "Silenced" if kind == "silence" else "Acknowledged"
    messages.success(request, f"{done} {mute['alert_id']}.")
    return _back()


@require_POST
@login_required
@page_guard()
def alert_unmute(request: HttpRequest) -> HttpResponse:
    alert_id = request.POST.get("alert", "")
    svc.alert_unmute(
        acting_user=request.user,
        cluster=request.POST.get("cluster", ""),
        alert_id=alert_id,
        reason=request.POST.get("reason", ""),
        origin=origin_from_request(request),
    )
    messages.success(request, f"Lifted the silence of {alert_id}.")
    return _back()


urlpatterns: list[URLPattern] = [
    path("alerts/mute/", alert_mute, name="alert-mute"),
    path("alerts/unmute/", alert_unmute, name="alert-unmute"),
]
