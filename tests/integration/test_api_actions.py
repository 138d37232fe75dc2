"""The API twins of the DLQ actions, bulk replay jobs, pending actions, collectors and audit
verify: same services as the pages (audit rows, validation, nothing written on bad input)."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.models import ApiToken, AuditEvent, ReplayJob
from tests.integration.dlq_support import add_letters, make_topic, role_user

pytestmark = [pytest.mark.redis, pytest.mark.django_db]

DLQ = "/api/v1/clusters/default/topics/orders/dlq"
JSON = "application/json"


@pytest.fixture
def letters(r, mq_config) -> list[str]:
    make_topic(mq_config)
    return add_letters(r, mq_config, "orders", 4)


def bearer(role: str) -> dict[str, str]:
    _, token = ApiToken.issue(role_user(role.lower(), role), read_only=False)
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def test_letter_detail_delete_purge_export(letters) -> None:
    admin, viewer, c = bearer("Admin"), bearer("Viewer"), Client()
    detail = c.get(f"{DLQ}/{letters[0]}", **viewer).json()
    assert detail["letter"]["id"] == letters[0]
    assert isinstance(detail["followups"], list)
    assert c.get(f"{DLQ}/9-9", **viewer).status_code == 404
    exported = c.post(f"{DLQ}/export", {"ids": [letters[1]]}, content_type=JSON, **viewer)
    assert [x["id"] for x in exported.json()["letters"]] == [letters[1]]
    assert c.post(f"{DLQ}/export", {"ids": "x"}, content_type=JSON, **viewer).status_code == 400
    before = AuditEvent.objects.count()
    no_reason = c.post(f"{DLQ}/{letters[0]}/delete", {}, content_type=JSON, **admin)
    assert no_reason.status_code == 400
    assert AuditEvent.objects.count() == before
    deleted = c.post(f"{DLQ}/{letters[0]}/delete", {"reason": "r"}, content_type=JSON, **admin)
    assert deleted.json() == {"id": letters[0], "deleted": True}
    wrong = c.post(f"{DLQ}/purge", {"confirm": "x", "reason": "r"}, content_type=JSON, **admin)
    assert wrong.status_code == 400
    purge = {"confirm": "orders", "reason": "r"}
    assert c.post(f"{DLQ}/purge", purge, content_type=JSON, **admin).json()["purged"] == 3
    assert c.post(f"{DLQ}/purge", purge, content_type=JSON, **viewer).status_code == 403


def test_bulk_replay_job_preview_start_progress(letters) -> None:
    op, c = bearer("Operator"), Client()
    assert c.post(f"{DLQ}/bulk", {}, content_type=JSON, **op).status_code == 400
    resp = c.post(f"{DLQ}/bulk", {"all": True, "partition": 1}, content_type=JSON, **op)
    assert resp.status_code == 201
    job = resp.json()
    assert job["status"] == "draft"
    assert job["total"] == 2
    assert len(job["plan"]) == 2
    url = f"{DLQ}/jobs/{job['id']}"
    assert c.get(url, **bearer("Viewer")).json()["id"] == job["id"]
    assert c.post(f"{url}/start", {}, content_type=JSON, **op).status_code == 400
    started = c.post(f"{url}/start", {"reason": "INC-1"}, content_type=JSON, **op).json()
    assert started["status"] != "draft"
    assert c.get(url, **op).json()["done"] >= 0
    assert ReplayJob.objects.filter(pk=job["id"]).exists()


def test_bulk_cancel_draft(letters) -> None:
    op, c = bearer("Operator"), Client()
    body = {"ids": letters[:2]}
    job = c.post(f"{DLQ}/bulk", body, content_type=JSON, **op).json()
    cancelled = c.post(f"{DLQ}/jobs/{job['id']}/cancel", {}, content_type=JSON, **op).json()
    assert cancelled["status"] == "cancelled"


def test_pending_claim_and_move(r, mq_config) -> None:
    make_topic(mq_config)
    key = mq_config.keys.partition("orders", 0)
    ids = [r.xadd(key, {"payload": str(i)}).decode() for i in range(2)]
    r.xreadgroup("default-group", "c1", {key: ">"}, count=10)
    op, c = bearer("Operator"), Client()
    url = "/api/v1/clusters/default/topics/orders/pending"
    body = {"group": "default-group", "partition": 0, "ids": ids[:1], "consumer": "c9"}
    assert c.post(f"{url}/claim", body, content_type=JSON, **op).json()["claimed"] == ids[:1]
    bad = {**body, "partition": "zero"}
    assert c.post(f"{url}/claim", bad, content_type=JSON, **op).status_code == 400
    move = {"group": "default-group", "partition": 0, "ids": ids[1:]}
    assert c.post(f"{url}/move-to-dlq", move, content_type=JSON, **op).status_code == 400
    moved = c.post(f"{url}/move-to-dlq", {**move, "reason": "r"}, content_type=JSON, **op)
    assert moved.json()["moved"] == ids[1:]


def test_collectors_audit_verify_and_openapi() -> None:
    viewer, c = bearer("Viewer"), Client()
    rows = c.get("/api/v1/collectors", **viewer).json()["collectors"]
    assert [row["cluster"] for row in rows] == ["default"]
    assert c.get("/api/v1/audit/verify", **viewer).json()["intact"] is True
    doc = c.get("/api/v1/openapi.json", **viewer).json()
    assert doc["openapi"].startswith("3.")
    assert c.get("/api/v1/openapi.json").status_code == 401
