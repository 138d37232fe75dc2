"""Issue 30, probed as the database's owner without the audit key (SQLite, triggers
dropped): the rows after ``AUDIT_SIGNED_FROM`` moved to ids below it (the id is in
neither the hash nor the HMAC), stripped and re-chained, must not read as intact."""

from __future__ import annotations

import pytest
from django.db import connection

from dashboard.models import AuditEvent, AuditEventType
from dashboard.models.audit import GENESIS_HASH, suspended_audit_triggers
from dashboard.services.audit import Actor, audit_begin, audit_complete, audit_verify

pytestmark = pytest.mark.django_db

KEY = "k" * 32
SHIFT = 10**9


def _renumber_strip_and_rechain() -> None:
    """The attacker: every row to id - SHIFT (below any AUDIT_SIGNED_FROM), macs blanked,
    one reason forged, every hash rebuilt."""
    with suspended_audit_triggers(), connection.cursor() as cursor:
        cursor.execute("PRAGMA foreign_keys = OFF")
        cursor.execute(
            "UPDATE dashboard_auditevent SET id = id - %s, "
            "completes_id = CASE WHEN completes_id IS NULL THEN NULL ELSE completes_id - %s END, "
            "mac = '', reason = 'forged'",
            [SHIFT, SHIFT],
        )
        cursor.execute("UPDATE dashboard_audittopic SET event_id = event_id - %s", [SHIFT])
        prev = GENESIS_HASH
        for row in AuditEvent.objects.order_by("id"):
            new = row.compute_hash(prev)
            cursor.execute(
                "UPDATE dashboard_auditevent SET prev_hash = %s, hash = %s WHERE id = %s",
                [prev, new, row.pk],
            )
            prev = new
        cursor.execute("PRAGMA foreign_keys = ON")


def test_signed_rows_moved_below_signed_from_break_the_chain(settings) -> None:
    settings.AUDIT_HMAC_KEY = KEY
    first = audit_begin(Actor(None), AuditEventType.DLQ_PURGE, reason="x")
    audit_complete(first, outcome="purged")
    settings.AUDIT_SIGNED_FROM = first.pk  # signed from the first row on
    assert audit_verify().intact
    _renumber_strip_and_rechain()
    assert AuditEvent.objects.filter(reason="forged").count() == 2
    report = audit_verify()
    assert not report.intact
    assert "renumbered" in report.problem
