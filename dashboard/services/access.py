"""Access administration: roles, topic-scoped groups and sensitive topics (manage_access: Admin).

A user's **role** is a role group (Viewer, Operator, Admin: every topic). A
**scoped group** ``scope:<name>`` carries one role's permissions on topic name
patterns per cluster (``cluster/pattern``, ``*/pattern`` for every cluster), the way
single sign-on's ``oidc:`` groups do; its members see and act on matching topics
only (a user also in a role group sees everything that role gives). **Sensitive
topics** mask payloads and header values for roles without ``view_payload``.

Every change validates first (a bad name, pattern, cluster or user writes nothing),
then writes the change and its audit row (``role.change``) in one transaction.
Groups of single sign-on (``oidc:``) and LDAP (``ldap:``) users are rewritten at each
login, so they are not edited here.
"""

from __future__ import annotations

import re
from typing import Any

from django.contrib.auth.models import Group, User
from django.db import transaction

from dashboard.clusters import cluster_names
from dashboard.models import AuditEventType, GroupTopicScope, SensitiveTopic
from dashboard.permissions import ROLES, Action, action_permissions, roles_sync
from dashboard.services.audit import Actor, audit_record
from dashboard.sso.mapping import is_external_username

__all__ = [
    "SCOPED_PREFIX",
    "group_delete",
    "group_put",
    "member_set",
    "parse_scope",
    "role_set",
    "sensitive_add",
    "sensitive_remove",
]

SCOPED_PREFIX = "scope:"
MAX_SCOPES = 100
_PATTERN = re.compile(r"[A-Za-z0-9._*?\[\]!-]{1,200}")
_GROUP = re.compile(r"[A-Za-z0-9._-]{1,100}")


def _cluster(value: str) -> str:
    """ "" for every cluster, else a configured cluster's name."""
    value = (value or "").strip()
    if value in ("", "*"):
        return ""
    if value not in cluster_names():
        raise ValueError(f"unknown cluster {value[:100]!r}")
    return value


def _pattern(value: str) -> str:
    value = (value or "").strip()
    if not _PATTERN.fullmatch(value):
        raise ValueError(
            f"topic pattern {value[:60]!r}: 1-200 characters of A-Z a-z 0-9 . _ - "
            "and the wildcards * ? [ ] !"
        )
    return value


def parse_scope(text: str) -> tuple[str, str]:
    """``cluster/pattern`` or ``pattern`` (every cluster) -> (cluster or "", pattern)."""
    cluster, sep, pattern = str(text or "").strip().partition("/")
    if not sep:
        cluster, pattern = "", cluster
    return _cluster(cluster), _pattern(pattern)


def _role(value: str | None) -> str | None:
    if value in (None, "", "none"):
        return None
    if value not in ROLES:
        raise ValueError(f"role: one of {', '.join(ROLES)} or none, not {str(value)[:30]!r}")
    return value


def _user(username: str) -> User:
    user = User.objects.filter(username=username).first()
    if user is None:
        raise ValueError(f"unknown user {str(username)[:100]!r}")
    return user


def _scoped(name: str) -> str:
    """The full name of scoped group ``name`` (with or without its prefix)."""
    name = str(name or "").strip().removeprefix(SCOPED_PREFIX)
    if not _GROUP.fullmatch(name):
        raise ValueError(f"group name {name[:60]!r}: 1-100 characters of A-Z a-z 0-9 . _ -")
    return SCOPED_PREFIX + name


def _require(actor: Actor) -> None:
    """manage_access, unless the actor's user is None: ``manage.py access`` on the server,
    audited as ``system`` (a web request always carries a user, anonymous or not)."""
    if actor.user is not None:
        actor.require(Action.MANAGE_ACCESS)


def _audit(actor: Actor, reason: str, detail: dict[str, Any]) -> None:
    why = (reason or "").strip()[:500]
    audit_record(actor, AuditEventType.ROLE_CHANGE, reason=why, detail=detail)


def role_set(actor: Actor, *, username: str, role: str | None, reason: str = "") -> dict[str, Any]:
    """Put ``username`` in exactly one role group (or none); scoped groups are kept."""
    _require(actor)
    wanted, user = _role(role), _user(username)
    if is_external_username(user.username):
        raise ValueError(
            "single sign-on and LDAP users get their roles from the identity provider or directory"
        )
    if Group.objects.filter(name__in=ROLES).count() < len(ROLES):
        roles_sync()
    with transaction.atomic():
        before = sorted(user.groups.filter(name__in=ROLES).values_list("name", flat=True))
        user.groups.remove(*Group.objects.filter(name__in=ROLES))
        if wanted:
            user.groups.add(Group.objects.get(name=wanted))
        detail = {"change": "role", "user": user.username, "from": before, "to": wanted}
        _audit(actor, reason, detail)
    return {"user": user.username, "role": wanted, "previous": before}


def group_put(
    actor: Actor, *, name: str, role: str, scopes: list[str], reason: str = ""
) -> dict[str, Any]:
    """Create or update scoped group ``name``: ``role``'s permissions on ``scopes``."""
    _require(actor)
    full, wanted_role = _scoped(name), _role(role)
    if wanted_role is None:
        raise ValueError("a scoped group needs a role")
    parsed = sorted({parse_scope(s) for s in scopes if str(s).strip()})
    if not parsed:
        raise ValueError("a scoped group needs at least one topic pattern")
    if len(parsed) > MAX_SCOPES:
        raise ValueError(f"at most {MAX_SCOPES} topic patterns per group")
    perms = action_permissions()
    with transaction.atomic():
        group, created = Group.objects.get_or_create(name=full)
        before = sorted((s.cluster, s.pattern) for s in group.topic_scopes.all())
        group.permissions.set([perms[a] for a in sorted(ROLES[wanted_role])])
        group.topic_scopes.all().delete()
        GroupTopicScope.objects.bulk_create(
            GroupTopicScope(group=group, cluster=c, pattern=p) for c, p in parsed
        )
        detail = {
            "change": "group",
            "group": full,
            "role": wanted_role,
            "created": created,
            "scopes": [f"{c or '*'}/{p}" for c, p in parsed],
            "previous_scopes": [f"{c or '*'}/{p}" for c, p in before],
        }
        _audit(actor, reason, detail)
    return {"group": full, "role": wanted_role, "scopes": detail["scopes"], "created": created}


def group_delete(actor: Actor, *, name: str, reason: str = "") -> dict[str, Any]:
    """Delete scoped group ``name`` (its members lose what it gave them)."""
    _require(actor)
    full = _scoped(name)
    group = Group.objects.filter(name=full).first()
    if group is None:
        raise ValueError(f"no scoped group {full!r}")
    with transaction.atomic():
        members = sorted(group.user_set.values_list("username", flat=True))
        group.delete()
        _audit(actor, reason, {"change": "group-delete", "group": full, "members": members})
    return {"group": full, "deleted": True, "members": members}


def member_set(
    actor: Actor, *, group: str, username: str, member: bool, reason: str = ""
) -> dict[str, Any]:
    """Add ``username`` to (or remove it from) scoped group ``group``."""
    _require(actor)
    full, user = _scoped(group), _user(username)
    found = Group.objects.filter(name=full).first()
    if found is None:
        raise ValueError(f"no scoped group {full!r}")
    if is_external_username(user.username):
        raise ValueError(
            "single sign-on and LDAP users get their groups from the identity provider or directory"
        )
    with transaction.atomic():
        (user.groups.add if member else user.groups.remove)(found)
        detail = {"change": "member", "group": full, "user": user.username, "member": member}
        _audit(actor, reason, detail)
    return {"group": full, "user": user.username, "member": member}


def sensitive_add(
    actor: Actor, *, cluster: str, pattern: str, note: str = "", reason: str = ""
) -> dict[str, Any]:
    """Mark topics matching ``pattern`` (on ``cluster``, "" or "*" for every one) sensitive."""
    _require(actor)
    c, p = _cluster(cluster), _pattern(pattern)
    with transaction.atomic():
        _row, created = SensitiveTopic.objects.update_or_create(
            cluster=c, pattern=p, defaults={"note": (note or "").strip()[:200]}
        )
        scope = f"{c or '*'}/{p}"
        _audit(actor, reason, {"change": "sensitive-add", "scope": scope, "created": created})
    return {"scope": f"{c or '*'}/{p}", "created": created}


def sensitive_remove(
    actor: Actor, *, cluster: str, pattern: str, reason: str = ""
) -> dict[str, Any]:
    """Unmark topics matching ``pattern`` on ``cluster``."""
    _require(actor)
    c, p = _cluster(cluster), _pattern(pattern)
    with transaction.atomic():
        deleted, _ = SensitiveTopic.objects.filter(cluster=c, pattern=p).delete()
        if not deleted:
            raise ValueError(f"{c or '*'}/{p} is not marked sensitive")
        _audit(actor, reason, {"change": "sensitive-remove", "scope": f"{c or '*'}/{p}"})
    return {"scope": f"{c or '*'}/{p}", "removed": True}
