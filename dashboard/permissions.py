"""Who may do what: roles (Django groups Viewer, Operator, Admin) mapped to actions.

Views and services ask :func:`has_action` / :func:`require_action`; templates get
the same answers through the ``can`` context so a button a role cannot use is
never rendered, and the server refuses it anyway (403).

An action is the custom permission ``dashboard.console_<action>``. Groups carry
them (synced from :data:`ROLES` after every ``migrate``, and by ``manage.py sync_roles``);
a group may be scoped to topic
name patterns (:class:`~dashboard.models.GroupTopicScope`), and then its
permissions hold only on matching topics. A user's answers are computed once
per user object and cached on it (one request, one job, one thread pool).

A question without a topic is one of two kinds. ``view`` without a topic is a
read of a cluster-wide page (alerts, collectors, the audit log...): a scoped
grant answers it where one of its scopes may match (the rows shown are then
filtered topic by topic). Every other action without a topic is a *global*
action (access administration, sensitive-topic marks, silences of alerts that
name no topic): only a grant without scope allows it, so an Admin scoped to
``orders-*`` stays an Admin of ``orders-*``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from django.core.exceptions import PermissionDenied

from dashboard.clusters import ReadOnlyClusterError, UnknownClusterError, read_only

__all__ = [
    "ADMIN",
    "MQ_WRITES",
    "OPERATOR",
    "ROLES",
    "VIEWER",
    "Action",
    "action_permissions",
    "actions_for",
    "can_map",
    "cluster_visible",
    "has_action",
    "has_action_somewhere",
    "payload_visible",
    "require_action",
    "require_action_somewhere",
    "role_of",
    "roles_sync",
    "row_visible",
    "topic_sensitive",
    "topic_visible",
    "view_scopes",
]


class Action(StrEnum):
    VIEW = "view"  # every page and API read
    VIEW_PAYLOAD = "view_payload"  # unmasked payloads of sensitive topics
    REPLAY = "replay"  # replay dead letters to their original partition
    CLAIM = "claim"  # claim pending entries to a consumer
    MOVE_TO_DLQ = "move_to_dlq"  # move pending entries to the DLQ
    PRODUCE = "produce"  # produce a test message to a topic
    FORCE = "force"  # replay an already replayed letter again
    REPLAY_TARGET = "replay_target"  # replay to another topic/partition
    DELETE = "delete"  # delete one dead letter
    PURGE = "purge"  # purge a whole DLQ
    SET_POSITION = "set_position"  # move a consumer group's position (skip or reprocess)
    SILENCE = "silence"  # silence or acknowledge an open alert
    MANAGE_ACCESS = "manage_access"  # roles, topic scopes and sensitive topics
    RETRY = "retry"  # retry items of the retry set now, or delete them
    MANAGE_TOPICS = "manage_topics"  # create, grow, trim and delete topics
    MANAGE_GROUPS = "manage_groups"  # create and delete consumer groups

    @property
    def codename(self) -> str:
        return f"console_{self.value}"

    @property
    def label(self) -> str:
        """The permission's name, as Django's admin shows it."""
        return _LABELS[self]


_LABELS = {
    Action.VIEW: "View pages and API reads",
    Action.VIEW_PAYLOAD: "See payloads of sensitive topics",
    Action.REPLAY: "Replay dead letters to their original partition",
    Action.CLAIM: "Claim pending entries to a consumer",
    Action.MOVE_TO_DLQ: "Move pending entries to the DLQ",
    Action.PRODUCE: "Produce a test message to a topic",
    Action.FORCE: "Force replay of an already replayed letter",
    Action.REPLAY_TARGET: "Replay to another topic or partition",
    Action.DELETE: "Delete a dead letter",
    Action.PURGE: "Purge a whole DLQ",
    Action.SET_POSITION: "Move a consumer group's position",
    Action.SILENCE: "Silence or acknowledge an alert",
    Action.MANAGE_ACCESS: "Manage roles, topic scopes and sensitive topics",
    Action.RETRY: "Retry or delete items of the retry set",
    Action.MANAGE_TOPICS: "Create, grow, trim and delete topics",
    Action.MANAGE_GROUPS: "Create and delete consumer groups",
}


# the actions that write to the MQ Redis: none on a read-only cluster (dashboard.clusters)
MQ_WRITES = frozenset(
    {
        Action.REPLAY,
        Action.CLAIM,
        Action.MOVE_TO_DLQ,
        Action.PRODUCE,
        Action.FORCE,
        Action.REPLAY_TARGET,
        Action.DELETE,
        Action.PURGE,
        Action.SET_POSITION,
        Action.RETRY,
        Action.MANAGE_TOPICS,
        Action.MANAGE_GROUPS,
    }
)

VIEWER = "Viewer"
OPERATOR = "Operator"
ADMIN = "Admin"
ROLES: dict[str, frozenset[Action]] = {
    VIEWER: frozenset({Action.VIEW}),
    OPERATOR: frozenset(
        {
            Action.VIEW,
            Action.VIEW_PAYLOAD,
            Action.REPLAY,
            Action.CLAIM,
            Action.MOVE_TO_DLQ,
            Action.PRODUCE,
            Action.RETRY,
        }
    ),
    ADMIN: frozenset(Action),
}
_CACHE_ATTR = "_opsdash_grants"
_CODENAMES = {a.codename: a for a in Action}


@dataclass(frozen=True, slots=True)
class _Grant:
    """Actions one group (or the user directly) grants, on all topics or on matching ones."""

    actions: frozenset[Action]
    scopes: tuple[tuple[str, str], ...]  # (cluster or "", pattern); empty: every topic

    def covers(self, cluster: str | None, topic: str | None) -> bool:
        """Whether the grant's actions hold on ``topic``; without a topic (a global
        action) only a grant without scope holds."""
        from fnmatch import fnmatchcase

        if not self.scopes:
            return True
        if topic is None:
            return False
        return any(
            (not c or cluster is None or c == cluster) and fnmatchcase(topic, p)
            for c, p in self.scopes
        )

    def reaches(self, cluster: str | None) -> bool:
        """Whether some topic of ``cluster`` (None: of some cluster) may be covered."""
        return not self.scopes or any(
            not c or cluster is None or c == cluster for c, _ in self.scopes
        )


def _grants(user: Any) -> list[_Grant]:
    cached: list[_Grant] | None = getattr(user, _CACHE_ATTR, None)
    if cached is not None:
        return cached
    from django.contrib.auth.models import Permission

    from dashboard.models import GroupTopicScope

    grants: list[_Grant] = []
    if user.is_superuser:
        grants.append(_Grant(frozenset(Action), ()))
    else:
        group_ids = list(user.groups.values_list("id", flat=True))
        perms: dict[int, set[Action]] = {gid: set() for gid in group_ids}
        rows = Permission.objects.filter(
            group__id__in=group_ids, content_type__app_label="dashboard"
        ).values_list("group__id", "codename")
        for gid, codename in rows:
            if codename in _CODENAMES:
                perms[gid].add(_CODENAMES[codename])
        scopes: dict[int, list[tuple[str, str]]] = {gid: [] for gid in group_ids}
        for gid, cluster, pattern in GroupTopicScope.objects.filter(
            group_id__in=group_ids
        ).values_list("group_id", "cluster", "pattern"):
            scopes[gid].append((cluster, pattern))
        for gid in group_ids:
            if perms[gid]:
                grants.append(_Grant(frozenset(perms[gid]), tuple(scopes[gid])))
        direct = {
            _CODENAMES[c]
            for c in user.user_permissions.filter(content_type__app_label="dashboard").values_list(
                "codename", flat=True
            )
            if c in _CODENAMES
        }
        if direct:
            grants.append(_Grant(frozenset(direct), ()))
    setattr(user, _CACHE_ATTR, grants)
    return grants


def _active(user: Any) -> bool:
    return bool(getattr(user, "is_authenticated", False) and user.is_active)


def role_of(user: Any) -> str | None:
    """The strongest role of ``user`` (superusers are Admin), or None."""
    if not _active(user):
        return None
    if user.is_superuser:
        return ADMIN
    names = set(user.groups.values_list("name", flat=True))
    for role in (ADMIN, OPERATOR, VIEWER):
        if role in names:
            return role
    return None


def actions_for(user: Any, *, cluster: str | None = None, topic: str | None = None) -> set[Action]:
    """Every action ``user`` may do on ``topic``; without a topic, the global actions
    (grants without scope) and ``view`` when some grant reaches ``cluster``; on a read-only
    cluster none that writes to its Redis."""
    if not _active(user):
        return set()
    found: set[Action] = set()
    for grant in _grants(user):
        if grant.covers(cluster, topic):
            found |= grant.actions
        elif topic is None and Action.VIEW in grant.actions and grant.reaches(cluster):
            found.add(Action.VIEW)  # a cluster-wide read; its rows are filtered by topic
    if cluster and found & MQ_WRITES and _read_only(cluster):
        found -= MQ_WRITES
    return found


def has_action_somewhere(user: Any, action: Action) -> bool:
    """Whether some grant of ``user`` carries ``action``, on some topic at least: for a
    form whose targets are then checked one by one (never as the check itself)."""
    return _active(user) and any(action in grant.actions for grant in _grants(user))


def require_action_somewhere(user: Any, action: Action) -> None:
    """Raise PermissionDenied (403) unless some grant of ``user`` carries ``action``: the
    first gate of a write whose target (and its topic) is checked once it is known."""
    if not has_action_somewhere(user, action):
        raise PermissionDenied(f"your role may not {action.value}")


def _read_only(cluster: str) -> bool:
    try:
        return read_only(cluster)
    except UnknownClusterError:  # a scope naming a cluster no longer configured
        return False


def topic_visible(user: Any, cluster: str, topic: str) -> bool:
    """Whether ``user`` may see ``topic`` at all (topic name patterns per group)."""
    return Action.VIEW in actions_for(user, cluster=cluster, topic=topic)


def cluster_visible(user: Any, cluster: str) -> bool:
    """Whether ``user`` may see anything of ``cluster`` (some grant's scope reaches it)."""
    return Action.VIEW in actions_for(user, cluster=cluster)


def row_visible(user: Any, cluster: str, topic: str | None) -> bool:
    """Whether a row of a topic-less page (alert, audit event, pipeline, collector) may be
    shown: its topic must be visible, or, for a row without topic, its cluster."""
    if topic:
        return topic_visible(user, cluster, topic)
    return cluster_visible(user, cluster)


def view_scopes(user: Any) -> tuple[tuple[str, str], ...] | None:
    """The (cluster or "", pattern) scopes that limit what ``user`` may see, or None when
    some grant of "view" has no scope (everything is visible). Empty: nothing is."""
    if not _active(user):
        return ()
    found: list[tuple[str, str]] = []
    for grant in _grants(user):
        if Action.VIEW in grant.actions:
            if not grant.scopes:
                return None
            found.extend(grant.scopes)
    return tuple(found)


def can_map(actions: set[Action]) -> dict[str, bool]:
    """The ``can`` context of templates: ``{action value: allowed}`` for every action."""
    return {a.value: a in actions for a in Action}


def has_action(
    user: Any, action: Action, *, cluster: str | None = None, topic: str | None = None
) -> bool:
    return action in actions_for(user, cluster=cluster, topic=topic)


def require_action(
    user: Any, action: Action, *, cluster: str | None = None, topic: str | None = None
) -> None:
    """Raise PermissionDenied (403) unless ``user`` may do ``action``; ReadOnlyClusterError
    (a PermissionDenied) for an action that writes to a read-only cluster."""
    if cluster and action in MQ_WRITES and _read_only(cluster):
        raise ReadOnlyClusterError(cluster)
    if not has_action(user, action, cluster=cluster, topic=topic):
        raise PermissionDenied(f"your role may not {action.value}")


def topic_sensitive(cluster: str, topic: str) -> bool:
    """Whether ``topic`` is marked sensitive (its payloads are masked for viewers)."""
    from dashboard.models import SensitiveTopic

    return any(s.matches(cluster, topic) for s in SensitiveTopic.objects.all())


def payload_visible(user: Any, cluster: str, topic: str) -> bool:
    """Payloads and headers of ``topic`` may be shown unmasked to ``user``."""
    if not topic_visible(user, cluster, topic):
        return False
    if has_action(user, Action.VIEW_PAYLOAD, cluster=cluster, topic=topic):
        return True
    return not topic_sensitive(cluster, topic)


def action_permissions(using: str = "default") -> dict[Action, Any]:
    """The custom permission row of every action (created when missing)."""
    from django.contrib.auth.models import Permission
    from django.contrib.contenttypes.models import ContentType

    from dashboard.models import ConsoleAccess

    ct = ContentType.objects.db_manager(using).get_for_model(
        ConsoleAccess, for_concrete_model=False
    )
    perms: dict[Action, Any] = {}
    for action in Action:
        perm, _ = Permission.objects.using(using).get_or_create(
            content_type=ct, codename=action.codename, defaults={"name": action.label}
        )
        perms[action] = perm
    return perms


def roles_sync(using: str = "default") -> dict[str, list[str]]:
    """Create or repair the three groups and their custom permissions, from :data:`ROLES`:
    after every ``migrate`` (``dashboard.signals``) and by ``manage.py sync_roles``.

    Extra permissions an admin added to a role group are removed, so a role
    means the same everywhere. Idempotent. Returns role -> codenames granted.
    """
    from django.contrib.auth.models import Group

    perms = action_permissions(using)
    result: dict[str, list[str]] = {}
    for role, actions in ROLES.items():
        group, _ = Group.objects.using(using).get_or_create(name=role)
        wanted = [perms[a] for a in sorted(actions)]
        group.permissions.set(wanted)
        result[role] = [p.codename for p in wanted]
    return result
