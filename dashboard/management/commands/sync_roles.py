"""``manage.py sync_roles``: create or repair the Viewer/Operator/Admin groups (audited)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from dashboard.models import AuditEventType
from dashboard.permissions import roles_sync
from dashboard.services.audit import Actor, Origin, audit_record


class Command(BaseCommand):
    help = "Create or repair the Viewer, Operator and Admin groups and their permissions."

    def handle(self, *args: Any, **options: Any) -> None:
        result = roles_sync()
        actor = Actor(None, Origin.system("sync_roles"))
        audit_record(actor, AuditEventType.ROLE_SYNC, detail={"roles": result})
        for role, codenames in result.items():
            self.stdout.write(f"{role}: {', '.join(codenames)}")
