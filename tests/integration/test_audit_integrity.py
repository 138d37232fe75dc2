"""What the database's owner cannot hide from ``audit_verify``: HMACs stripped from the
rows after ``AUDIT_SIGNED_FROM``, and rows cut from the end while the counter is lowered,
caught by the chain head exported out of the database (SQLite, triggers dropped)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, transaction

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


def _strip_and_rechain(rewrite_id: int | None = None) -> None:
    """The attacker: blank every mac, optionally rewrite one row, rebuild every hash."""
    with suspended_audit_triggers(), connection.cursor() as cursor:
        if rewrite_id is not None:
            cursor.execute(
                "UPDATE dashboard_auditevent SET reason = 'forged' WHERE id = %s", [rewrite_id]
            )
        prev = GENESIS_HASH
        for row in AuditEvent.objects.order_by("id"):
            new = row.compute_hash(prev)
            cursor.execute(
                "UPDATE dashboard_auditevent SET prev_hash = %s, hash = %s, mac = '' WHERE id = %s",
                [prev, new, row.pk],
            )
            prev = new


def _truncate(keep_last_id: int) -> int:
    """The attacker: delete every row after ``keep_last_id``, lower the counter to match."""
    with suspended_audit_triggers(), connection.cursor() as cursor:
        cursor.execute("DELETE FROM dashboard_auditevent WHERE id > %s", [keep_last_id])
        gone = cursor.rowcount
        cursor.execute(
            "UPDATE dashboard_auditchainhead SET appended = appended - %s WHERE id = 1", [gone]
        )
    return int(gone)


def test_verify_prints_the_signed_from_value_to_pin(settings, capsys) -> None:
    settings.AUDIT_HMAC_KEY = ""
    _events(1)  # written before the key
    settings.AUDIT_HMAC_KEY = KEY
    signed = _events(2)
    report = audit_verify()
    assert report.intact
    assert report.pin == signed[0].pk
    call_command("audit_verify")
    out = capsys.readouterr().out
    assert "downgrade check not configured" in out
    assert f"AUDIT_SIGNED_FROM={signed[0].pk}" in out
    settings.AUDIT_SIGNED_FROM = signed[0].pk
    pinned = audit_verify()
    assert pinned.intact
    assert pinned.pin is None
    assert pinned.unsigned == 2


def test_stripped_hmacs_after_signed_from_break_the_chain(settings) -> None:
    settings.AUDIT_HMAC_KEY = KEY
    rows = _events(3)
    settings.AUDIT_SIGNED_FROM = rows[0].pk
    _strip_and_rechain(rewrite_id=rows[1].pk)
    report = audit_verify()
    assert not report.intact
    assert report.first_broken_id == rows[0].pk
    assert "AUDIT_SIGNED_FROM" in report.problem
    with pytest.raises(CommandError, match="HMACs stripped"):
        call_command("audit_verify")


def _rolled_back_append() -> None:
    try:
        with transaction.atomic():
            audit_begin(Actor(None), AuditEventType.DLQ_PURGE, reason="no")
            raise RuntimeError("rolled back")
    except RuntimeError:
        pass


def test_every_committed_append_exports_the_head(
    settings, tmp_path: Path, caplog, django_capture_on_commit_callbacks
) -> None:
    settings.AUDIT_HMAC_KEY = KEY
    settings.AUDIT_HEAD_FILE = str(tmp_path / "audit-head.jsonl")
    caplog.set_level(logging.INFO, logger="opsdash.audit.head")
    with django_capture_on_commit_callbacks(execute=True):
        rows = _events(2)
    lines = Path(settings.AUDIT_HEAD_FILE).read_text().splitlines()
    last = AuditEvent.objects.order_by("-id").first()
    assert last is not None
    assert [json.loads(line)["count"] for line in lines] == [1, 2, 3, 4]
    head = json.loads(lines[-1])
    assert (head["id"], head["hash"], head["signed"]) == (last.pk, last.hash, True)
    logged = [r.getMessage() for r in caplog.records if r.name == "opsdash.audit.head"]
    assert logged[-1] == "audit-head " + lines[-1]
    # a rolled-back append exports nothing: the head never names a row that is not there
    with django_capture_on_commit_callbacks(execute=True):
        _rolled_back_append()
    assert len(Path(settings.AUDIT_HEAD_FILE).read_text().splitlines()) == 4
    assert audit_verify().intact
    assert rows


def test_truncation_with_a_lowered_counter_is_caught_by_the_exported_head(
    settings, tmp_path: Path, caplog, django_capture_on_commit_callbacks
) -> None:
    settings.AUDIT_HMAC_KEY = KEY
    settings.AUDIT_HEAD_FILE = str(tmp_path / "audit-head.jsonl")
    caplog.set_level(logging.INFO, logger="opsdash.audit.head")
    with django_capture_on_commit_callbacks(execute=True):
        rows = _events(3)
    shipped = tmp_path / "shipped-copy.jsonl"
    shipped.write_text(Path(settings.AUDIT_HEAD_FILE).read_text())
    log_line = [r.getMessage() for r in caplog.records if r.name == "opsdash.audit.head"][-1]
    assert _truncate(rows[2].pk - 1) == 2  # the last action's intent and outcome rows
    settings.AUDIT_HEAD_FILE = ""
    assert audit_verify().intact  # the database alone cannot tell
    settings.AUDIT_HEAD_FILE = str(shipped)
    report = audit_verify()
    assert not report.intact
    assert "truncated" in report.problem
    for head in (str(shipped), log_line):
        with pytest.raises(CommandError, match="truncated"):
            call_command("audit_verify", head=head)


def test_a_rechained_or_stripped_head_row_is_caught(
    settings, tmp_path: Path, django_capture_on_commit_callbacks
) -> None:
    settings.AUDIT_HMAC_KEY = KEY
    settings.AUDIT_HEAD_FILE = str(tmp_path / "audit-head.jsonl")
    with django_capture_on_commit_callbacks(execute=True):
        rows = _events(2)
    _strip_and_rechain(rewrite_id=rows[0].pk)
    report = audit_verify()
    assert not report.intact
    assert "hash is not in the chain" in report.problem
    # macs blanked only (the hashes unchanged): the head was exported signed
    settings.AUDIT_HEAD_FILE = str(tmp_path / "second.jsonl")
    with django_capture_on_commit_callbacks(execute=True):
        _events(1)
    _strip_and_rechain()
    stripped = audit_verify()
    assert not stripped.intact
    assert "HMACs stripped" in stripped.problem


def test_a_bad_head_is_a_clear_error(tmp_path: Path) -> None:
    _events(1)
    with pytest.raises(CommandError, match="cannot read the audit head file"):
        call_command("audit_verify", head=str(tmp_path / "missing.jsonl"))
    with pytest.raises(CommandError, match="no audit head"):
        call_command("audit_verify", head='{"id": "x"}')


def test_deploy_check_asks_for_signed_from_once_a_key_is_set(settings) -> None:
    from dashboard.checks import audit_key_check

    settings.AUDIT_HMAC_KEY = KEY
    settings.AUDIT_SIGNED_FROM = None
    assert [m.id for m in audit_key_check()] == ["dashboard.W002"]
    settings.AUDIT_SIGNED_FROM = 1
    assert audit_key_check() == []
