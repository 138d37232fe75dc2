"""Django's ``flush``, with the SQLite audit triggers suspended while it empties tables."""

from __future__ import annotations

from typing import Any

from django.core.management.commands.flush import Command as FlushCommand

from dashboard.models.audit import suspended_audit_triggers


class Command(FlushCommand):
    def handle(self, **options: Any) -> None:
        with suspended_audit_triggers(options.get("database") or "default"):
            super().handle(**options)
