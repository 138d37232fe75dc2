"""Audit rows only from validated input, and every intent row closed on error paths:
DLQ export ids (full match, bounded), an export that fails in Redis, a bulk replay
rate limit out of range (real Redis, Django test client)."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.models import AuditEvent, AuditPhase, ReplayJob
from tests.integration.dlq_support import add_letters, make_topic, role_user

pytestmark = [pytest.mark.redis, pytest.mark.django_db]

EXPORT = "/clusters/default/topics/orders/dlq/export/"


def _client(role: str, name: str) -> Client:
    client = Client()
    client.force_login(role_user(name, role))
    return client


@pytest.mark.parametrize(
    "ids",
    [
        ["1-0\n2-0"],  # a trailing newline and a second id in one value
        ["x" * 5000],  # any length
        ["99999999999999999999999-0"],  # beyond 2^64
    ],
)
def test_export_refuses_bad_ids_before_any_audit_row(r, mq_config, ids) -> None:
    make_topic(mq_config)
    add_letters(r, mq_config, "orders", 1)
    resp = _client("Viewer", "v1").post(EXPORT, {"ids": ids})
    assert resp.status_code == 400
    assert not AuditEvent.objects.exists()


def test_export_of_valid_ids_is_audited_with_them(r, mq_config) -> None:
    make_topic(mq_config)
    ids = add_letters(r, mq_config, "orders", 2)
    resp = _client("Viewer", "v2").post(EXPORT, {"ids": ids})
    assert resp.status_code == 200
    intent = AuditEvent.objects.get(phase=AuditPhase.INTENT)
    assert intent.letter_ids == ids
    assert intent.final_outcome == "exported"


def test_export_of_an_unknown_topic_closes_its_intent_row(r, mq_config) -> None:
    resp = _client("Viewer", "v3").post(
        "/clusters/default/topics/ghost/dlq/export/", {"ids": ["1-0"]}
    )
    assert resp.status_code == 404
    intent = AuditEvent.objects.get(phase=AuditPhase.INTENT)
    assert intent.final_outcome == "failed"


@pytest.mark.parametrize("rate", [str(2**31), str(2**70)])
def test_bulk_start_refuses_an_out_of_range_rate_limit_before_the_audit_row(
    r, mq_config, rate
) -> None:
    make_topic(mq_config)
    add_letters(r, mq_config, "orders", 3)
    op = _client("Operator", "op")
    resp = op.post("/clusters/default/topics/orders/dlq/bulk/", {"all": "1"})
    assert resp.status_code in (200, 302)
    job = ReplayJob.objects.get()
    resp = op.post(
        f"/clusters/default/topics/orders/dlq/jobs/{job.pk}/start/",
        {"reason": "rate", "rate_limit": rate},
    )
    assert resp.status_code == 400
    assert "rate limit" in resp.content.decode()
    assert not AuditEvent.objects.exists()
    job.refresh_from_db()
    assert job.status == "draft"
