"""Signal handlers of the console, connected in :meth:`DashboardConfig.ready`."""

from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_migrate, post_save

from dashboard.models import AuditEventType
from dashboard.permissions import roles_sync
from dashboard.services.audit import Actor, audit_record

__all__ = ["audit_admin_change", "connect", "sync_roles_after_migrate"]

_AUDITED_MODELS = {
    ("auth", "user"),
    ("auth", "group"),
    ("dashboard", "grouptopicscope"),
    ("dashboard", "sensitivetopic"),
}


def audit_admin_change(sender: Any, instance: Any, created: bool, **kwargs: Any) -> None:
    """Role, membership, scope and sensitivity edits made in Django admin are audited."""
    ct = instance.content_type
    if not created or ct is None or (ct.app_label, ct.model) not in _AUDITED_MODELS:
        return
    audit_record(
        Actor(instance.user),
        AuditEventType.ROLE_CHANGE,
        detail={
            "object": f"{ct.app_label}.{ct.model}:{instance.object_id}",
            "repr": instance.object_repr[:200],
            "action_flag": int(instance.action_flag),
            "change": instance.get_change_message()[:500],
        },
    )


def sync_roles_after_migrate(sender: AppConfig, *, using: str = "default", **kwargs: Any) -> None:
    """After ``migrate`` (and a ``flush``): one permission per action and the role groups
    as :data:`dashboard.permissions.ROLES` says, idempotently. New actions need no
    migration; the migrations up to 0011 that listed permissions stay as they were."""
    roles_sync(using)


def connect(app: AppConfig | None = None) -> None:
    """Connect every handler (idempotent: each has a dispatch uid)."""
    if app is not None:
        post_migrate.connect(
            sync_roles_after_migrate, sender=app, dispatch_uid="opsdash-roles-sync"
        )
    post_save.connect(
        audit_admin_change, sender="admin.LogEntry", dispatch_uid="opsdash-role-audit"
    )
