"""Roles, topic scopes and sensitive topics as users meet them."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User
from django.core.exceptions import PermissionDenied

from dashboard.models import GroupTopicScope, SensitiveTopic
from dashboard.permissions import (
    ADMIN,
    OPERATOR,
    VIEWER,
    Action,
    has_action,
    payload_visible,
    require_action,
    role_of,
    roles_sync,
    topic_visible,
)

pytestmark = pytest.mark.django_db


def make(name: str, *groups: str) -> User:
    user = User.objects.create_user(name, password="pw-123456789")
    for group in groups:
        user.groups.add(Group.objects.get(name=group))
    return User.objects.get(pk=user.pk)


def test_migration_creates_the_three_roles_with_permissions() -> None:
    perms = {
        g.name: set(g.permissions.values_list("codename", flat=True))
        for g in Group.objects.filter(name__in=[VIEWER, OPERATOR, ADMIN])
    }
    assert perms[VIEWER] == {"console_view"}
    assert "console_replay" in perms[OPERATOR]
    assert "console_purge" not in perms[OPERATOR]
    assert {"console_purge", "console_force", "console_replay_target"} <= perms[ADMIN]


def test_roles_matrix_of_actions() -> None:
    viewer, operator, admin = make("v", VIEWER), make("o", OPERATOR), make("a", ADMIN)
    assert role_of(viewer) == VIEWER
    assert role_of(admin) == ADMIN
    assert has_action(viewer, Action.VIEW)
    assert not has_action(viewer, Action.REPLAY)
    assert has_action(operator, Action.REPLAY)
    assert has_action(operator, Action.CLAIM)
    assert not has_action(operator, Action.PURGE)
    assert not has_action(operator, Action.FORCE)
    assert all(has_action(admin, a) for a in Action)


def test_user_without_group_and_anonymous_get_nothing() -> None:
    from django.contrib.auth.models import AnonymousUser

    nobody = make("nobody")
    assert role_of(nobody) is None
    assert not has_action(nobody, Action.VIEW)
    assert not has_action(AnonymousUser(), Action.VIEW)
    with pytest.raises(PermissionDenied):
        require_action(nobody, Action.VIEW)


def test_inactive_user_is_denied() -> None:
    user = make("gone", ADMIN)
    user.is_active = False
    assert not has_action(user, Action.VIEW)


def test_topic_scope_limits_visibility_and_actions() -> None:
    scoped = Group.objects.create(name="orders-ops")
    scoped.permissions.set(Group.objects.get(name=OPERATOR).permissions.all())
    GroupTopicScope.objects.create(group=scoped, pattern="orders-*")
    user = make("scoped")
    user.groups.add(scoped)
    user = User.objects.get(pk=user.pk)
    assert topic_visible(user, "default", "orders-eu")
    assert has_action(user, Action.REPLAY, cluster="default", topic="orders-eu")
    assert not topic_visible(user, "default", "payments")
    assert not has_action(user, Action.REPLAY, cluster="default", topic="payments")


def test_scoped_operator_plus_global_viewer_reads_all_but_acts_in_scope() -> None:
    scoped = Group.objects.create(name="orders-ops")
    scoped.permissions.set(Group.objects.get(name=OPERATOR).permissions.all())
    GroupTopicScope.objects.create(group=scoped, pattern="orders-*", cluster="default")
    user = make("mixed", VIEWER)
    user.groups.add(scoped)
    user = User.objects.get(pk=user.pk)
    assert topic_visible(user, "default", "payments")
    assert not has_action(user, Action.REPLAY, cluster="default", topic="payments")
    assert has_action(user, Action.REPLAY, cluster="default", topic="orders-1")
    assert not has_action(user, Action.REPLAY, cluster="other", topic="orders-1")


def test_sensitive_topics_mask_payloads_for_viewers_only() -> None:
    SensitiveTopic.objects.create(pattern="pay*")
    viewer, operator = make("v", VIEWER), make("o", OPERATOR)
    assert not payload_visible(viewer, "default", "payments")
    assert payload_visible(viewer, "default", "orders")
    assert payload_visible(operator, "default", "payments")


def test_roles_sync_repairs_drifted_groups() -> None:
    Group.objects.get(name=OPERATOR).permissions.clear()
    Group.objects.filter(name=VIEWER).delete()
    result = roles_sync()
    assert "console_replay" in result[OPERATOR]
    assert set(Group.objects.get(name=VIEWER).permissions.values_list("codename", flat=True)) == {
        "console_view"
    }


def test_superuser_is_admin() -> None:
    root = User.objects.create_superuser("root", password="pw-123456789")
    assert role_of(root) == ADMIN
    assert has_action(root, Action.PURGE)
