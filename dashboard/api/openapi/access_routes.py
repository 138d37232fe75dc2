"""The access administration routes of the API description (manage_access: Admin)."""

from __future__ import annotations

from dashboard.api.openapi.route import REASON, Route, route

__all__ = ["ACCESS_ROUTES", "ACCESS_TWINS"]

A = "/api/v1/access"

ACCESS_ROUTES: tuple[Route, ...] = (
    route(
        "api-access", "get", A, "access", "Admin", "Users, groups, topic scopes, sensitive topics"
    ),
    route(
        "api-access-user",
        "get",
        A + "/users/{username}",
        "access",
        "Admin",
        "Who can see what: one user's topics, masked topics and actions per cluster",
    ),
    route(
        "api-access-role",
        "post",
        A + "/role",
        "access",
        "Admin",
        "Set a user's role (Viewer, Operator, Admin or none)",
        body={
            "username": ("string", "user"),
            "role": ("string", "role or none"),
            "reason": REASON,
        },
    ),
    route(
        "api-access-groups",
        "post",
        A + "/groups",
        "access",
        "Admin",
        "Create or update a topic-scoped group",
        body={
            "name": ("string", "group name (stored as scope:<name>)"),
            "role": ("string", "the role the group gives"),
            "scopes": ("array", "cluster/pattern or pattern (every cluster)"),
            "reason": REASON,
        },
    ),
    route(
        "api-access-group-delete",
        "post",
        A + "/groups/delete",
        "access",
        "Admin",
        "Delete a topic-scoped group",
        body={"name": ("string", "group name"), "reason": REASON},
    ),
    route(
        "api-access-members",
        "post",
        A + "/members",
        "access",
        "Admin",
        "Add a user to a scoped group or remove it",
        body={
            "group": ("string", "scoped group"),
            "username": ("string", "user"),
            "member": ("boolean", "true: add, false: remove"),
            "reason": REASON,
        },
    ),
    route(
        "api-access-sensitive",
        "post",
        A + "/sensitive",
        "access",
        "Admin",
        "Mark topics sensitive (payloads and header values masked) or unmark them",
        body={
            "cluster": ("string", "cluster, or * for every cluster"),
            "pattern": ("string", "topic name pattern (fnmatch)"),
            "note": ("string", "why"),
            "remove": ("boolean", "true: unmark"),
            "reason": REASON,
        },
    ),
)

ACCESS_TWINS: dict[str, str] = {
    "access": "api-access",
    "access-user": "api-access-user",
    "access-role": "api-access-role",
    "access-groups": "api-access-groups",
    "access-group-delete": "api-access-group-delete",
    "access-members": "api-access-members",
    "access-sensitive": "api-access-sensitive",
}
