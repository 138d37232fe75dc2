"""``manage.py audit_verify``: check the audit hash chain; prints "intact" or the first broken row.

``--head FILE_OR_LINE`` compares the database with a chain head exported when it was
written (a copy of ``AUDIT_HEAD_FILE``, or one ``audit-head {...}`` log line); default:
the newest head in ``AUDIT_HEAD_FILE``. Without ``AUDIT_SIGNED_FROM`` (and with
``AUDIT_HMAC_KEY``), the value to set is printed. Exit status 0 when intact, 1 when
broken (for cron and monitoring).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from dashboard.services.audit import HeadError, audit_verify, read_head


class Command(BaseCommand):
    help = "Verify the audit log's hash chain, its HMACs and the exported chain head."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--head",
            default="",
            help="a file of exported chain heads (AUDIT_HEAD_FILE or a shipped copy), or one "
            "head line; default: AUDIT_HEAD_FILE",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        head = None
        if options["head"]:
            try:
                head = read_head(options["head"])
            except HeadError as exc:
                raise CommandError(str(exc)) from None
        report = audit_verify(head=head)
        if not report.intact:
            raise CommandError(str(report), returncode=1)
        self.stdout.write(str(report))
        if report.head is not None:
            h = report.head
            self.stdout.write(f"matches the exported head: row {h.id}, {h.count} rows")
        for note in report.notes:
            self.stdout.write(f"note: {note}")
        if report.pin is not None:
            self.stdout.write(f"AUDIT_SIGNED_FROM={report.pin}")
