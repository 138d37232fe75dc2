"""Access administration, for an unscoped Admin only (the selectors and services decide);
a page's write comes back to its section of the overview."""

from __future__ import annotations

from typing import Annotated, Any

from django.http import QueryDict
from django.shortcuts import redirect

from dashboard.operations.declare import Call, Operation, Page, Reason, doc
from dashboard.permissions import Action
from dashboard.selectors.access import access_overview, user_access
from dashboard.services import access as svc

__all__ = ["OPERATIONS"]

User = Annotated[str, doc("user")]


class RoleSet(Reason):
    username: User = ""
    role: Annotated[str, doc("Viewer, Operator, Admin or none")] = ""


class GroupPut(Reason):
    name: Annotated[str, doc("group name (stored as scope:<name>)")] = ""
    role: Annotated[str, doc("the role the group gives")] = ""
    scopes: Annotated[list[str], doc("cluster/pattern or pattern (every cluster)")] = []


class GroupName(Reason):
    name: Annotated[str, doc("group name")] = ""


class Membership(Reason):
    group: Annotated[str, doc("scoped group")] = ""
    username: User = ""
    member: Annotated[bool, doc("true: add, false: remove")] = False


class SensitiveMark(Reason):
    cluster: Annotated[str, doc("cluster, or * for every cluster")] = ""
    pattern: Annotated[str, doc("topic name pattern (fnmatch)")] = ""
    note: Annotated[str, doc("why")] = ""
    remove: Annotated[bool, doc("true: unmark")] = False


def _sensitive(remove: bool, note: str, **kw: Any) -> dict[str, Any]:
    return svc.sensitive_remove(**kw) if remove else svc.sensitive_add(note=note, **kw)


def _scopes(data: QueryDict, read: dict[str, Any]) -> dict[str, Any]:
    """The form's scopes: one a line, or comma-separated."""
    return read | {"scopes": data.get("scopes", "").replace(",", "\n").splitlines()}


def _to(anchor: str) -> Any:
    return lambda c, _: redirect(f"/access/#{anchor}")


def _write(
    summary: str, name: str, kind: type[Reason], service: Any, anchor: str, form: Any = None
) -> Operation:
    """A write (``service`` given the input) at ``access/<name>/`` (``group-``: ``groups/``),
    its page posting the form and coming back to ``anchor`` of the overview."""
    route = name.replace("group-", "groups/")
    return Operation(
        summary,
        "access",
        Action.MANAGE_ACCESS,
        kind,
        lambda c: service(**c.write()),
        page=Page(f"access-{name}", f"access/{route}/", "POST", form=form, answer=_to(anchor)),
        early=False,
    )


def _d(c: Call[Any], d: Any) -> dict[str, Any]:
    return {"d": d}


OPERATIONS = (
    Operation(
        "Users, groups, topic scopes, sensitive topics",
        "access",
        Action.MANAGE_ACCESS,
        run=lambda c: access_overview(**c.read()),
        page=Page("access", "access/", template="dashboard/access.html", context=_d),
        early=False,
    ),
    Operation(
        "Who can see what: one user's topics, masked topics and actions per cluster",
        "access",
        Action.MANAGE_ACCESS,
        run=lambda c: user_access(**c.read()),
        page=Page(
            "access-user",
            "access/users/<str:username>/",
            template="dashboard/access_user.html",
            context=_d,
        ),
        early=False,
    ),
    _write(
        "Set a user's role (Viewer, Operator, Admin or none)",
        "role",
        RoleSet,
        svc.role_set,
        "users",
    ),
    _write(
        "Create or update a topic-scoped group",
        "groups",
        GroupPut,
        svc.group_put,
        "groups",
        _scopes,
    ),
    _write("Delete a topic-scoped group", "group-delete", GroupName, svc.group_delete, "groups"),
    _write(
        "Add a user to a scoped group or remove it",
        "members",
        Membership,
        svc.member_set,
        "groups",
        lambda data, read: read | {"member": data.get("member", "add") != "remove"},
    ),
    _write(
        "Mark topics sensitive (payloads and header values masked) or unmark them",
        "sensitive",
        SensitiveMark,
        _sensitive,
        "sensitive",
        lambda data, read: read | {"remove": bool(data.get("remove"))},
    ),
)
