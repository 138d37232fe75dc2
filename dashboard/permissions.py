"""Who may do what: roles (Django groups Viewer, Operator, Admin) mapped to actions.

Views and services ask :func:`has_action` / :func:`require_action`; templates get
the same answers through the ``can`` context so a button a role cannot use is
never rendered, and the server refuses it anyway (403).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from django.core.exceptions import PermissionDenied

__all__ = ["ROLES", "Action", "has_action", "require_action", "role_of", "topic_visible"]


class Action(StrEnum):
    VIEW = "view"  # every page and API read
    VIEW_PAYLOAD = "view_payload"  # unmasked payloads of sensitive topics
    REPLAY = "replay"  # replay dead letters to their original partition
    CLAIM = "claim"  # claim pending entries to a consumer
    MOVE_TO_DLQ = "move_to_dlq"  # move pending entries to the DLQ
    FORCE = "force"  # replay an already replayed letter again
    REPLAY_TARGET = "replay_target"  # replay to another topic/partition
    DELETE = "delete"  # delete one dead letter
    PURGE = "purge"  # purge a whole DLQ


VIEWER = "Viewer"
OPERATOR = "Operator"
ADMIN = "Admin"
ROLES: dict[str, frozenset[Action]] = {
    VIEWER: frozenset({Action.VIEW}),
    OPERATOR: frozenset(
        {Action.VIEW, Action.VIEW_PAYLOAD, Action.REPLAY, Action.CLAIM, Action.MOVE_TO_DLQ}
    ),
    ADMIN: frozenset(Action),
}


def role_of(user: Any) -> str | None:
    """The strongest role of ``user`` (superusers are Admin), or None."""
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return None
    if user.is_superuser:
        return ADMIN
    names = set(user.groups.values_list("name", flat=True))
    for role in (ADMIN, OPERATOR, VIEWER):
        if role in names:
            return role
    return None


def topic_visible(user: Any, cluster: str, topic: str) -> bool:
    """Whether ``user`` may see ``topic`` at all (topic name patterns per group)."""
    return role_of(user) is not None


def has_action(
    user: Any, action: Action, *, cluster: str | None = None, topic: str | None = None
) -> bool:
    role = role_of(user)
    if role is None:
        return False
    if topic is not None and cluster is not None and not topic_visible(user, cluster, topic):
        return False
    return action in ROLES[role]


def require_action(
    user: Any, action: Action, *, cluster: str | None = None, topic: str | None = None
) -> None:
    """Raise PermissionDenied (403) unless ``user`` may do ``action``."""
    if not has_action(user, action, cluster=cluster, topic=topic):
        raise PermissionDenied(f"your role may not {action.value}")
