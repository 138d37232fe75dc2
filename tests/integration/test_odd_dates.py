"""Dates a producer controls never break a page: a letter's ``failedAt`` outside the
calendar once shifted to UTC, or an entry id whose millisecond part is near 2^64
(real Redis, Django test client)."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from tests.integration.dlq_support import add_letters, make_topic, role_user

pytestmark = [pytest.mark.redis, pytest.mark.django_db]

ODD_FAILED_AT = "0001-01-01T00:00:00+23:59"
HUGE_ID = "18446744073709551000-0"


def _viewer() -> Client:
    client = Client()
    client.force_login(role_user("v", "Viewer"))
    return client


def _letter(r, mq_config, entry_id: str, failed_at: str) -> str:
    fields = {
        "originalTopic": "orders",
        "payload": "{}",
        "timestamp": failed_at,
        "failedAt": failed_at,
        "retryCount": "1",
        "maxRetries": "3",
        "partitionId": "0",
        "headers": json.dumps({"partitionId": "0"}),
        "originalMessageId": f"{entry_id}",
    }
    return r.xadd(mq_config.keys.dlq("orders"), fields, id=entry_id).decode()


@pytest.mark.parametrize(
    ("entry_id", "failed_at"),
    [("*", ODD_FAILED_AT), (HUGE_ID, ""), (HUGE_ID, ODD_FAILED_AT)],
)
def test_dlq_pages_show_odd_dates_as_text(r, mq_config, entry_id, failed_at) -> None:
    make_topic(mq_config)
    add_letters(r, mq_config, "orders", 1)
    letter = _letter(r, mq_config, entry_id, failed_at)
    viewer = _viewer()
    listing = viewer.get("/clusters/default/topics/orders/dlq/")
    assert listing.status_code == 200
    text = listing.content.decode()
    assert letter in text
    assert (ODD_FAILED_AT if failed_at else "invalid date") in text
    assert "never" not in text
    page = viewer.get(f"/clusters/default/topics/orders/dlq/{letter}/")
    assert page.status_code == 200
    api = viewer.get("/api/v1/clusters/default/topics/orders/dlq")
    assert api.status_code == 200


@pytest.mark.parametrize("stamp", [ODD_FAILED_AT, "9999-12-31T23:59:59-23:59"])
def test_message_page_with_an_id_near_2_to_the_64(r, mq_config, stamp) -> None:
    make_topic(mq_config)
    key = mq_config.keys.partition("orders", 0)
    r.xadd(key, {"payload": "{}", "timestamp": stamp}, id=HUGE_ID)
    page = _viewer().get(f"/clusters/default/topics/orders/messages/0/{HUGE_ID}/")
    assert page.status_code == 200
    assert f"<dt>Timestamp</dt><dd>{stamp}</dd>" in page.content.decode()
