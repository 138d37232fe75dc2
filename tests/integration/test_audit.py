"""The audit log: intent before outcome, append-only, hash chain, verify command, exports."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator

import pytest
from django.core.cache import cache
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test import Client

from dashboard.models import AuditEvent, AuditEventType
from dashboard.models.audit import AuditImmutableError, suspended_audit_triggers
from dashboard.services.audit import (
    VERIFY_CACHE_KEY,
    Actor,
    audit_begin,
    audit_complete,
    audit_verify,
)
from dashboard.services.dlq import dlq_replay
from tests.integration.dlq_support import add_letters, make_topic, role_user

pytestmark = [pytest.mark.redis, pytest.mark.django_db]


@pytest.fixture(autouse=True)
def _fresh_verify_cache() -> Iterator[None]:
    """No cached chain answer before a test, nor left behind for the next file's tests
    (one here caches a broken chain's answer)."""
    cache.delete(VERIFY_CACHE_KEY)
    yield
    cache.delete(VERIFY_CACHE_KEY)


def _events(n: int, **fields) -> list[AuditEvent]:
    rows = []
    for _i in range(n):
        intent = audit_begin(Actor(None, topic="orders"), AuditEventType.DLQ_REPLAY, **fields)
        audit_complete(intent, outcome="replayed", counts={"replayed": 1})
        rows.append(intent)
    return rows


def test_intent_row_exists_before_the_redis_action(r, mq_config) -> None:
    """A crash between intent and outcome leaves an 'unknown outcome' row, never none."""
    make_topic(mq_config)
    ids = add_letters(r, mq_config, "orders", 1)
    operator = role_user("op", "Operator")
    seen: list[str] = []

    from mqcore.dlq import DeadLetters

    original = DeadLetters.replay

    def crash(self, *args, **kwargs):
        seen.extend(AuditEvent.objects.values_list("outcome", flat=True))
        raise SystemExit("worker died")

    DeadLetters.replay = crash
    try:
        with pytest.raises(SystemExit):
            dlq_replay(Actor(operator, cluster="default", topic="orders"), dlq_id=ids[0])
    finally:
        DeadLetters.replay = original
    assert seen == ["unknown"]
    intent = AuditEvent.objects.get()
    assert intent.final_outcome == "unknown"
    assert intent.actor == "op"
    assert intent.letter_ids == ids
    assert r.xlen(mq_config.keys.partition("orders", 0)) == 0


def test_rows_refuse_update_and_delete_at_the_model_layer() -> None:
    row = _events(1)[0]
    row.reason = "rewritten"
    with pytest.raises(AuditImmutableError):
        row.save()
    with pytest.raises(AuditImmutableError):
        row.delete()
    with pytest.raises(AuditImmutableError):
        AuditEvent.objects.filter(pk=row.pk).update(reason="x")
    with pytest.raises(AuditImmutableError):
        AuditEvent.objects.all().delete()
    assert AuditEvent.objects.count() == 2


def test_chain_intact_then_tampered_row_is_reported(capsys) -> None:
    rows = _events(3, reason="INC-1")
    assert audit_verify().intact
    call_command("audit_verify")
    assert "intact" in capsys.readouterr().out
    # an attacker with write access to the database file (who drops the triggers)
    with suspended_audit_triggers(), connection.cursor() as cursor:
        cursor.execute(
            "UPDATE dashboard_auditevent SET reason = %s WHERE id = %s", ["nothing", rows[1].pk]
        )
    report = audit_verify()
    assert not report.intact
    assert report.first_broken_id == rows[1].pk
    with pytest.raises(CommandError, match=f"broken at row {rows[1].pk}"):
        call_command("audit_verify")


def test_deleted_row_breaks_the_chain() -> None:
    rows = _events(3)
    with suspended_audit_triggers(), connection.cursor() as cursor:
        cursor.execute("DELETE FROM dashboard_auditevent WHERE id = %s", [rows[1].pk])
    report = audit_verify()
    assert not report.intact
    with suspended_audit_triggers(), connection.cursor() as cursor:
        cursor.execute("DELETE FROM dashboard_auditevent WHERE id > %s", [rows[0].pk])
    assert not audit_verify().intact  # truncating the tail is caught by the chain head count


def test_csv_export_neutralises_formulas() -> None:
    for evil in ('=HYPERLINK("http://x")', "+1+1", "-2+3", "@SUM(A1)"):
        _events(1, reason=evil)
    viewer = Client()
    viewer.force_login(role_user("v", "Viewer"))
    resp = viewer.get("/audit/export.csv")
    assert resp.status_code == 200
    rows = list(csv.DictReader(io.StringIO(b"".join(resp.streaming_content).decode())))
    reasons = sorted(row["reason"] for row in rows)
    assert reasons == sorted(['\'=HYPERLINK("http://x")', "'+1+1", "'-2+3", "'@SUM(A1)"])
    for row in rows:
        for value in row.values():
            assert not value.startswith(("=", "+", "-", "@"))


def test_json_export_and_api_newest_first_filterable() -> None:
    _events(2, reason="a")
    intent = audit_begin(Actor(None, topic="payments"), AuditEventType.DLQ_PURGE, reason="b")
    admin = Client()
    admin.force_login(role_user("adm", "Admin"))
    response = admin.get("/audit/export.json")
    assert response.streaming  # row by row, never the whole export in memory
    data = json.loads(b"".join(response.streaming_content))
    assert [e["id"] for e in data] == sorted((e["id"] for e in data), reverse=True)
    assert data[0]["outcome"] == "unknown"
    assert data[1]["outcome"] == "replayed"
    api = admin.get("/api/v1/audit?action=dlq.purge").json()
    assert [e["id"] for e in api["events"]] == [intent.pk]
    assert admin.get("/api/v1/audit?topic=orders&limit=1").json()["next_before"] is not None
    assert admin.get("/api/v1/audit?action=nope").status_code == 400
    assert Client().get("/api/v1/audit").status_code == 401


def test_audit_page_filters_and_chain_check() -> None:
    _events(1, reason="first")
    audit_begin(Actor(None, topic="t2"), AuditEventType.DLQ_DELETE, reason="x")
    c = Client()
    c.force_login(role_user("v", "Viewer"))
    body = c.get("/audit/?action=dlq.delete").content.decode()
    assert "delete letter" in body
    assert "first" not in body
    assert "status-UNKNOWN" in body
    assert 'data-chain="intact"' in c.get("/audit/verify/").content.decode()
    assert c.get("/audit/?since=garbage").status_code == 400


def test_role_change_in_django_admin_is_audited() -> None:
    from django.contrib.auth.models import Group, User

    root = User.objects.create_superuser("root", password="pw-123456789")
    target = role_user("bob", None)
    c = Client()
    c.force_login(root)
    resp = c.post(
        f"/admin/auth/user/{target.pk}/change/",
        {
            "username": "bob",
            "is_active": "on",
            "groups": [Group.objects.get(name="Operator").pk],
            "date_joined_0": "2026-01-01",
            "date_joined_1": "00:00:00",
            "initial-date_joined_0": "2026-01-01",
            "initial-date_joined_1": "00:00:00",
        },
    )
    assert resp.status_code == 302, resp.content[:500]
    event = AuditEvent.objects.get(event_type="role.change", phase="intent")
    assert event.actor == "root"
    assert "groups" in event.detail["change"].lower()
    assert audit_verify().intact


def test_sync_roles_command_is_audited(capsys) -> None:
    call_command("sync_roles")
    assert "Operator:" in capsys.readouterr().out
    assert AuditEvent.objects.filter(event_type="role.sync").exists()


def test_chain_check_page_rehashes_at_most_once_a_minute(settings) -> None:
    rows = _events(2)
    viewer = Client()
    viewer.force_login(role_user("v", "Viewer"))
    first = viewer.get("/audit/verify/").content.decode()
    assert 'data-chain="intact"' in first
    assert "checked " in first
    with suspended_audit_triggers(), connection.cursor() as cursor:
        cursor.execute(
            "UPDATE dashboard_auditevent SET reason = %s WHERE id = %s", ["x", rows[0].pk]
        )
    # within the interval the page shows the cached answer (no full re-hash per request)
    assert 'data-chain="intact"' in viewer.get("/audit/verify/").content.decode()
    assert not audit_verify().intact  # the command always re-checks
    cache.delete(VERIFY_CACHE_KEY)  # the interval has passed
    assert 'data-chain="broken"' in viewer.get("/audit/verify/").content.decode()
