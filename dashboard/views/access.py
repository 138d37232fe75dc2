"""Access administration pages (manage_access: Admin): users and roles, topic-scoped groups,
sensitive topics, and "who can see what" for one user.

Reads through :mod:`dashboard.selectors.access`, writes through
:mod:`dashboard.services.access` (validated, audited); each form posts and comes
back to the overview (a bad value answers 400 with the reason, nothing written).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import URLPattern, path
from django.views.decorators.http import require_GET, require_POST

from dashboard.selectors.access import access_overview, user_access
from dashboard.services import access as svc
from dashboard.services.audit import origin_from_request
from dashboard.views.errors import page_guard

__all__ = ["urlpatterns"]


def _done(request: HttpRequest, anchor: str) -> HttpResponse:
    return redirect(f"/access/#{anchor}")


@require_GET
@login_required
@page_guard()
def access_page(request: HttpRequest) -> HttpResponse:
    return render(request, "dashboard/access.html", {"d": access_overview(user=request.user)})


@require_GET
@login_required
@page_guard()
def access_user(request: HttpRequest, username: str) -> HttpResponse:
    data = user_access(user=request.user, username=username)
    return render(request, "dashboard/access_user.html", {"d": data})


@require_POST
@login_required
@page_guard()
def access_role(request: HttpRequest) -> HttpResponse:
    p = request.POST
    svc.role_set(
        acting_user=request.user,
        username=p.get("username", ""),
        role=p.get("role", ""),
        reason=p.get("reason", ""),
        origin=origin_from_request(request),
    )
    return _done(request, "users")


@require_POST
@login_required
@page_guard()
def access_groups(request: HttpRequest) -> HttpResponse:
    p = request.POST
    svc.group_put(
        acting_user=request.user,
        name=p.get("name", ""),
        role=p.get("role", ""),
        scopes=p.get("scopes", "").replace(",", "\n").splitlines(),
        reason=p.get("reason", ""),
        origin=origin_from_request(request),
    )
    return _done(request, "groups")


@require_POST
@login_required
@page_guard()
def access_group_delete(request: HttpRequest) -> HttpResponse:
    p = request.POST
    svc.group_delete(
        acting_user=request.user,
        name=p.get("name", ""),
        reason=p.get("reason", ""),
        origin=origin_from_request(request),
    )
    return _done(request, "groups")


@require_POST
@login_required
@page_guard()
def access_members(request: HttpRequest) -> HttpResponse:
    p = request.POST
    svc.member_set(
        acting_user=request.user,
        group=p.get("group", ""),
        username=p.get("username", ""),
        member=p.get("member", "add") != "remove",
        reason=p.get("reason", ""),
        origin=origin_from_request(request),
    )
    return _done(request, "groups")


@require_POST
@login_required
@page_guard()
def access_sensitive(request: HttpRequest) -> HttpResponse:
    p = request.POST
    kw: dict[str, Any] = {
        "acting_user": request.user,
        "cluster": p.get("cluster", ""),
        "pattern": p.get("pattern", ""),
        "reason": p.get("reason", ""),
        "origin": origin_from_request(request),
    }
    if p.get("remove"):
        svc.sensitive_remove(**kw)
    else:
        svc.sensitive_add(**kw, note=p.get("note", ""))
    return _done(request, "sensitive")


urlpatterns: list[URLPattern] = [
    path("access/", access_page, name="access"),
    path("access/users/<str:username>/", access_user, name="access-user"),
    path("access/role/", access_role, name="access-role"),
    path("access/groups/", access_groups, name="access-groups"),
    path("access/groups/delete/", access_group_delete, name="access-group-delete"),
    path("access/members/", access_members, name="access-members"),
    path("access/sensitive/", access_sensitive, name="access-sensitive"),
]
