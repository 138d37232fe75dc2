"""A DLQ text filter reads a bounded number of bytes per request, however large the letters."""

from __future__ import annotations

import pytest

from mqcore.dlq import DeadLetters
from tests.integration.dlq_support import add_letters, make_topic, role_user

pytestmark = [pytest.mark.redis, pytest.mark.django_db]

BIG = 64 * 1024


@pytest.fixture
def big_letters(r, mq_config) -> list[str]:
    make_topic(mq_config)
    return add_letters(r, mq_config, "orders", 60, payload=lambda i: f"{i:04d}" + "x" * BIG)


def test_text_filter_scan_stops_at_its_byte_bound(mq_config, big_letters) -> None:
    dlq = DeadLetters(mq_config)
    unbounded = dlq.page("orders", text="no-such-text")
    assert unbounded.scanned == 60
    assert unbounded.complete
    page = dlq.page("orders", text="no-such-text", max_scan_bytes=10 * BIG)
    assert 10 <= page.scanned <= 12  # about the budget, never the whole DLQ
    assert not page.complete
    assert page.next_cursor is not None
    rest = dlq.page("orders", text="no-such-text", before=page.next_cursor)
    assert page.scanned + rest.scanned == 60  # the cursor continues where it stopped


def test_dlq_page_text_filter_is_bounded_by_setting(client, big_letters, settings) -> None:
    settings.DLQ_TEXT_FILTER_MAX_BYTES = 5 * BIG
    client.force_login(role_user("op", "Operator"))
    body = client.get("/clusters/default/topics/orders/dlq/?text=0001").content.decode()
    assert "scan stopped at its bound" in body


def test_export_filename_comes_from_safe_topic_characters_only(client, big_letters) -> None:
    from dashboard.operations.dlq import export_disposition

    client.force_login(role_user("op", "Operator"))
    resp = client.post("/clusters/default/topics/orders/dlq/export/", {"ids": [big_letters[0]]})
    assert resp["Content-Disposition"] == 'attachment; filename="dlq-orders.json"'
    evil = export_disposition('a"; filename=x.html\r\nX: y')
    assert evil == 'attachment; filename="dlq-a___filename_x.html__X__y.json"'


def test_draft_bulk_replays_expire(r, mq_config, settings) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from dashboard.models import AuditEvent, ReplayJob, ReplayJobStatus
    from dashboard.services import bulk_replay as svc
    from dashboard.services.audit import Actor

    make_topic(mq_config)
    add_letters(r, mq_config, "orders", 5)
    operator = role_user("op", "Operator")

    def preview() -> ReplayJob:
        return svc.dlq_bulk_preview(
            Actor(operator, cluster="default", topic="orders"), selection=svc.BulkSelection()
        )

    old = preview()
    aged = timezone.now() - timedelta(seconds=settings.DLQ_DRAFT_TTL_S + 1)
    ReplayJob.objects.filter(pk=old.pk).update(created_at=aged)
    old.refresh_from_db()
    with pytest.raises(ValueError, match="preview expired"):
        svc.dlq_bulk_start(Actor(operator), job=old, reason="t", enqueue=False)
    assert not AuditEvent.objects.exists()  # refused before any audit row
    fresh = preview()  # each preview deletes expired drafts
    assert list(ReplayJob.objects.values_list("pk", flat=True)) == [fresh.pk]
    assert fresh.status == ReplayJobStatus.DRAFT
    assert settings.DLQ_DRAFT_TTL_S == 3600
