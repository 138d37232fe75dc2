"""JSON twins of the access administration pages (manage_access: Admin).

- ``GET /api/v1/access``: users, groups (role, scopes, members), sensitive topics
- ``GET /api/v1/access/users/<username>``: who can see what, per cluster and topic
- ``POST /api/v1/access/role`` ``{"username", "role": "Viewer|Operator|Admin|none", "reason"}``
- ``POST /api/v1/access/groups`` ``{"name", "role", "scopes": ["cluster/pattern"], "reason"}``
- ``POST /api/v1/access/groups/delete`` ``{"name", "reason"}``
- ``POST /api/v1/access/members`` ``{"group", "username", "member": true|false, "reason"}``
- ``POST /api/v1/access/sensitive`` ``{"cluster", "pattern", "note", "remove": false, "reason"}``
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import URLPattern, path

from dashboard.api.auth import api_view
from dashboard.body import Body
from dashboard.selectors.access import access_overview, user_access
from dashboard.services import access as svc
from dashboard.services.audit import origin_from_request

__all__ = ["urlpatterns"]


@api_view("GET")
def access(request: HttpRequest) -> HttpResponse:
    return JsonResponse(access_overview(user=request.user))


@api_view("GET")
def access_user_view(request: HttpRequest, username: str) -> HttpResponse:
    return JsonResponse(user_access(user=request.user, username=username))


@api_view("POST")
def role(request: HttpRequest) -> HttpResponse:
    b = Body(request)
    return JsonResponse(
        svc.role_set(
            acting_user=request.user,
            username=b.text("username"),
            role=b.text("role"),
            reason=b.text("reason"),
            origin=origin_from_request(request),
        )
    )


@api_view("POST")
def groups(request: HttpRequest) -> HttpResponse:
    b = Body(request)
    return JsonResponse(
        svc.group_put(
            acting_user=request.user,
            name=b.text("name"),
            role=b.text("role"),
            scopes=b.texts("scopes"),
            reason=b.text("reason"),
            origin=origin_from_request(request),
        )
    )


@api_view("POST")
def group_delete(request: HttpRequest) -> HttpResponse:
    b = Body(request)
    return JsonResponse(
        svc.group_delete(
            acting_user=request.user,
            name=b.text("name"),
            reason=b.text("reason"),
            origin=origin_from_request(request),
        )
    )


@api_view("POST")
def members(request: HttpRequest) -> HttpResponse:
    b = Body(request)
    return JsonResponse(
        svc.member_set(
            acting_user=request.user,
            group=b.text("group"),
            username=b.text("username"),
            member=b.flag("member"),
            reason=b.text("reason"),
            origin=origin_from_request(request),
        )
    )


@api_view("POST")
def sensitive(request: HttpRequest) -> HttpResponse:
    b = Body(request)
    kw: dict[str, Any] = {
        "acting_user": request.user,
        "cluster": b.text("cluster"),
        "pattern": b.text("pattern"),
        "reason": b.text("reason"),
        "origin": origin_from_request(request),
    }
    if b.flag("remove"):
        return JsonResponse(svc.sensitive_remove(**kw))
    return JsonResponse(svc.sensitive_add(**kw, note=b.text("note")))


A = "api/v1/access"
urlpatterns: list[URLPattern] = [
    path(A, access, name="api-access"),
    path(A + "/users/<str:username>", access_user_view, name="api-access-user"),
    path(A + "/role", role, name="api-access-role"),
    path(A + "/groups", groups, name="api-access-groups"),
    path(A + "/groups/delete", group_delete, name="api-access-group-delete"),
    path(A + "/members", members, name="api-access-members"),
    path(A + "/sensitive", sensitive, name="api-access-sensitive"),
]
