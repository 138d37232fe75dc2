"""The role groups and the console's permissions come from ``dashboard.permissions.ROLES``
through one post-migrate step, not from a list each migration restates."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, Permission
from django.core.management import call_command
from django.core.management.sql import emit_post_migrate_signal

from dashboard.models import ConsoleAccess
from dashboard.permissions import ROLES, Action

pytestmark = pytest.mark.django_db


def _granted() -> dict[str, set[str]]:
    return {
        role: set(Group.objects.get(name=role).permissions.values_list("codename", flat=True))
        for role in ROLES
    }


def _wanted() -> dict[str, set[str]]:
    return {role: {a.codename for a in actions} for role, actions in ROLES.items()}


def test_after_migrate_groups_are_roles() -> None:
    assert _granted() == _wanted()


def test_post_migrate_restores_missing_permissions_and_extras_idempotently() -> None:
    Permission.objects.filter(codename=Action.RETRY.codename).delete()  # as if a new action
    Group.objects.get(name="Viewer").permissions.add(
        Permission.objects.get(codename=Action.PURGE.codename)
    )
    Group.objects.filter(name="Operator").delete()

    emit_post_migrate_signal(verbosity=0, interactive=False, db="default")
    emit_post_migrate_signal(verbosity=0, interactive=False, db="default")

    assert _granted() == _wanted()
    for action in Action:
        assert Permission.objects.filter(codename=action.codename).count() == 1
    assert Permission.objects.get(codename=Action.RETRY.codename).name == Action.RETRY.label


def test_new_actions_need_no_migration() -> None:
    assert ConsoleAccess._meta.permissions == []
    call_command("makemigrations", "dashboard", check=True, dry_run=True, verbosity=0)
