"""The audit table refuses UPDATE and DELETE on SQLite too, and an HMAC key kept outside
the database signs the chain: a rewrite without the key, or a wrong key, is reported."""

from __future__ import annotations

import hashlib

import pytest
from django.db import DatabaseError, connection, transaction

from dashboard.models import AuditEvent, AuditEventType
from dashboard.models.audit import GENESIS_HASH, suspended_audit_triggers
from dashboard.services.audit import Actor, audit_begin, audit_complete, audit_verify

pytestmark = pytest.mark.django_db

KEY = "k" * 32


def _events(n: int) -> list[AuditEvent]:
    rows = []
    for _ in range(n):
        intent = audit_begin(Actor(None), AuditEventType.DLQ_PURGE, reason="x")
        audit_complete(intent, outcome="purged")
        rows.append(intent)
    return rows


@pytest.mark.skipif(connection.vendor != "sqlite", reason="the SQLite triggers")
@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE dashboard_auditevent SET reason = 'rewritten'",
        "DELETE FROM dashboard_auditevent",
        "DELETE FROM dashboard_auditevent WHERE id = (SELECT max(id) FROM dashboard_auditevent)",
    ],
)
def test_sqlite_refuses_update_and_delete_of_audit_rows(sql: str) -> None:
    _events(2)
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        connection.cursor().execute(sql)
    assert AuditEvent.objects.count() == 4
    assert not AuditEvent.objects.filter(reason="rewritten").exists()
    assert audit_verify().intact


def test_rows_carry_an_hmac_and_a_wrong_key_is_reported(settings) -> None:
    settings.AUDIT_HMAC_KEY = KEY
    rows = _events(2)
    assert all(len(row.mac) == 64 for row in AuditEvent.objects.all())
    assert audit_verify().intact
    settings.AUDIT_HMAC_KEY = "another-key-" + "z" * 20
    report = audit_verify()
    assert not report.intact
    assert report.first_broken_id == rows[0].pk
    assert "AUDIT_HMAC_KEY" in report.problem


def test_a_chain_rebuilt_without_the_key_is_reported(settings) -> None:
    settings.AUDIT_HMAC_KEY = KEY
    rows = _events(2)
    target = AuditEvent.objects.get(pk=rows[1].pk)
    # An attacker with database access rewrites a row and recomputes every hash after it
    # (the chain is public), but cannot compute the HMAC without the key.
    with suspended_audit_triggers(), connection.cursor() as cursor:
        cursor.execute(
            "UPDATE dashboard_auditevent SET reason = %s WHERE id = %s", ["forged", target.pk]
        )
        prev = GENESIS_HASH
        for row in AuditEvent.objects.order_by("id"):
            new = row.compute_hash(prev)
            forged = hashlib.sha256(new.encode()).hexdigest()  # a guess at the mac
            cursor.execute(
                "UPDATE dashboard_auditevent SET prev_hash = %s, hash = %s, mac = %s WHERE id = %s",
                [prev, new, forged if row.mac else "", row.pk],
            )
            prev = new
    report = audit_verify()
    assert not report.intact
    assert "HMAC" in report.problem
    settings.AUDIT_HMAC_KEY = ""
    assert audit_verify().intact  # the plain chain alone could not tell


def test_rows_from_before_the_key_are_counted(settings) -> None:
    settings.AUDIT_HMAC_KEY = ""
    _events(1)
    settings.AUDIT_HMAC_KEY = KEY
    _events(1)
    report = audit_verify()
    assert report.intact
    assert report.unsigned == 2
    assert "2 written before the HMAC key" in str(report)
