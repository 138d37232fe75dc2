"""Who can see what: the access overview and one user's effective access (manage_access).

The overview lists users with their role and groups, the groups with the role their
permissions amount to, their topic scopes and members, and the sensitive topics.
A user's view answers, per cluster, which topics of the latest snapshot they see,
which they see masked, and what they may do there, from the same
:mod:`dashboard.permissions` answers every page uses.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Group, User

from dashboard.clusters import cluster_names
from dashboard.models import SensitiveTopic
from dashboard.permissions import (
    ROLES,
    Action,
    actions_for,
    require_action,
    role_of,
    view_scopes,
)
from dashboard.selectors.pages.params import NotFoundError
from dashboard.selectors.pages.snapshot import snapshot_get

__all__ = ["MAX_TOPICS", "access_overview", "user_access"]

MAX_TOPICS = 2000  # topics listed per cluster in one user's view
_CODENAME = {a.codename: a for a in Action}


def _group_role(group: Group) -> str | None:
    """The role whose permissions ``group`` carries exactly, else None (custom)."""
    granted = {
        _CODENAME[c] for c in group.permissions.values_list("codename", flat=True) if c in _CODENAME
    }
    return next((role for role, actions in ROLES.items() if set(actions) == granted), None)


def _scope(cluster: str, pattern: str) -> str:
    return f"{cluster or '*'}/{pattern}"


def access_overview(*, user: Any) -> dict[str, Any]:
    """Users, groups and sensitive topics, for a user who may manage access."""
    if user is not None:  # None: manage.py access on the server
        require_action(user, Action.MANAGE_ACCESS)
    groups = []
    for g in Group.objects.order_by("name").prefetch_related("topic_scopes", "user_set"):
        groups.append(
            {
                "name": g.name,
                "kind": "role" if g.name in ROLES else (
                    "sso" if g.name.startswith("oidc:") else "scoped"
                ),
                "role": g.name if g.name in ROLES else _group_role(g),
                "scopes": [_scope(s.cluster, s.pattern) for s in g.topic_scopes.all()],
                "members": sorted(u.username for u in g.user_set.all()),
            }
        )  # fmt: skip
    users = [
        {
            "username": u.username,
            "active": u.is_active,
            "superuser": u.is_superuser,
            "role": role_of(u),
            "groups": sorted(g.name for g in u.groups.all()),
        }
        for u in User.objects.order_by("username").prefetch_related("groups")
    ]
    sensitive = [
        {"scope": _scope(s.cluster, s.pattern), "cluster": s.cluster, "pattern": s.pattern,
         "note": s.note}
        for s in SensitiveTopic.objects.all()
    ]  # fmt: skip
    return {"users": users, "groups": groups, "sensitive": sensitive, "roles": list(ROLES)}


def user_access(*, user: Any, username: str) -> dict[str, Any]:
    """What ``username`` may see and do, per cluster and topic of the latest snapshots."""
    if user is not None:
        require_action(user, Action.MANAGE_ACCESS)
    target = User.objects.filter(username=username).first()
    if target is None:
        raise NotFoundError(f"unknown user {str(username)[:100]!r}")
    scopes = view_scopes(target)
    marked = list(SensitiveTopic.objects.all())  # one query, matched in memory below
    clusters = []
    for cluster in cluster_names():
        snap = snapshot_get(cluster)
        names = [t.topic for t in snap.topics] if snap is not None else []
        rows = []
        for topic in names[:MAX_TOPICS]:
            actions = actions_for(target, cluster=cluster, topic=topic)
            visible = Action.VIEW in actions
            sensitive = any(m.matches(cluster, topic) for m in marked)
            rows.append(
                {
                    "topic": topic,
                    "visible": visible,
                    "sensitive": sensitive,
                    # as permissions.payload_visible answers it
                    "masked": visible and sensitive and Action.VIEW_PAYLOAD not in actions,
                    "actions": sorted(a.value for a in actions) if visible else [],
                }
            )
        clusters.append(
            {
                "cluster": cluster,
                "topics": rows,
                "visible": sum(1 for r in rows if r["visible"]),
                "masked": sum(1 for r in rows if r["masked"]),
                "listed": len(rows),
                "total": len(names),
                "snapshot": snap is not None,
            }
        )
    global_actions = actions_for(target)  # grants without scope (and "view" somewhere)
    if scopes is not None:
        global_actions.discard(Action.VIEW)
    return {
        "username": target.username,
        "active": target.is_active,
        "role": role_of(target),
        "groups": sorted(target.groups.values_list("name", flat=True)),
        "scopes": None if scopes is None else [_scope(c, p) for c, p in scopes],
        "global_actions": sorted(a.value for a in global_actions),
        "clusters": clusters,
    }
