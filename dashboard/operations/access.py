"""Access administration, for an unscoped Admin only (the selectors and services decide);
a page's write comes back to its section of the overview."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from django.shortcuts import redirect

from dashboard.operations.declare import Api, Call, Operation, Page, Reason
from dashboard.permissions import Action
from dashboard.selectors.access import access_overview, user_access
from dashboard.services import access as svc

__all__ = ["OPERATIONS"]

M = msgspec.Meta
API = "api/v1/access"


class RoleSet(Reason):
    username: Annotated[str, M(description="user")] = ""
    role: Annotated[str, M(description="Viewer, Operator, Admin or none")] = ""


class GroupPut(Reason):
    name: Annotated[str, M(description="group name (stored as scope:<name>)")] = ""
    role: Annotated[str, M(description="the role the group gives")] = ""
    scopes: Annotated[list[str], M(description="cluster/pattern or pattern (every cluster)")] = []


class GroupName(Reason):
    name: Annotated[str, M(description="group name")] = ""


class Membership(Reason):
    group: Annotated[str, M(description="scoped group")] = ""
    username: Annotated[str, M(description="user")] = ""
    member: Annotated[bool, M(description="true: add, false: remove")] = False


class SensitiveMark(Reason):
    cluster: Annotated[str, M(description="cluster, or * for every cluster")] = ""
    pattern: Annotated[str, M(description="topic name pattern (fnmatch)")] = ""
    note: Annotated[str, M(description="why")] = ""
    remove: Annotated[bool, M(description="true: unmark")] = False


def _sensitive(c: Call[SensitiveMark]) -> dict[str, Any]:
    kw = c.write()
    if kw.pop("remove"):
        del kw["note"]
        return svc.sensitive_remove(**kw)
    return svc.sensitive_add(**kw)


def _write(
    summary: str, name: str, route: str, kind: type[Reason], run: Any, anchor: str, form: Any = None
) -> Operation:
    """A write: its page posts the form and comes back to ``anchor`` of the overview."""
    return Operation(
        summary,
        "access",
        Action.MANAGE_ACCESS,
        kind,
        run,
        early=False,
        pages=(
            Page(
                f"access-{name}",
                f"access/{route}/",
                "POST",
                form=form,
                answer=lambda c, _: redirect(f"/access/#{anchor}"),
            ),
        ),
        api=Api(f"api-access-{name}", f"{API}/{route}", "POST"),
    )


OPERATIONS = (
    Operation(
        "Users, groups, topic scopes, sensitive topics",
        "access",
        Action.MANAGE_ACCESS,
        run=lambda c: access_overview(**c.read()),
        early=False,
        pages=(
            Page(
                "access", "access/", template="dashboard/access.html", context=lambda c, d: {"d": d}
            ),
        ),
        api=Api("api-access", API),
    ),
    Operation(
        "Who can see what: one user's topics, masked topics and actions per cluster",
        "access",
        Action.MANAGE_ACCESS,
        run=lambda c: user_access(**c.read()),
        early=False,
        pages=(
            Page(
                "access-user",
                "access/users/<str:username>/",
                template="dashboard/access_user.html",
                context=lambda c, d: {"d": d},
            ),
        ),
        api=Api("api-access-user", API + "/users/<str:username>"),
    ),
    _write(
        "Set a user's role (Viewer, Operator, Admin or none)",
        "role",
        "role",
        RoleSet,
        lambda c: svc.role_set(**c.write()),
        "users",
    ),
    _write(
        "Create or update a topic-scoped group",
        "groups",
        "groups",
        GroupPut,
        lambda c: svc.group_put(**c.write()),
        "groups",
        lambda data, read: (
            read | {"scopes": data.get("scopes", "").replace(",", "\n").splitlines()}
        ),
    ),
    _write(
        "Delete a topic-scoped group",
        "group-delete",
        "groups/delete",
        GroupName,
        lambda c: svc.group_delete(**c.write()),
        "groups",
    ),
    _write(
        "Add a user to a scoped group or remove it",
        "members",
        "members",
        Membership,
        lambda c: svc.member_set(**c.write()),
        "groups",
        lambda data, read: read | {"member": data.get("member", "add") != "remove"},
    ),
    _write(
        "Mark topics sensitive (payloads and header values masked) or unmark them",
        "sensitive",
        "sensitive",
        SensitiveMark,
        _sensitive,
        "sensitive",
        lambda data, read: read | {"remove": bool(data.get("remove"))},
    ),
)
