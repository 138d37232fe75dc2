"""``manage.py audit_verify``: check the audit hash chain; prints "intact" or the first broken row.

Exit status 0 when intact, 1 when broken (for cron and monitoring).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from dashboard.services.audit import audit_verify


class Command(BaseCommand):
    help = "Verify the audit log's hash chain."

    def handle(self, *args: Any, **options: Any) -> None:
        report = audit_verify()
        if not report.intact:
            raise CommandError(str(report), returncode=1)
        self.stdout.write(str(report))
