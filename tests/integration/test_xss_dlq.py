"""Hostile payloads and headers are rendered inert on every dead-letter page."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from dashboard.models import AuditEvent
from tests.integration.dlq_support import add_letters, make_topic, role_user

pytestmark = [pytest.mark.redis, pytest.mark.django_db]

EVIL = [
    "<script>alert(1)</script>",
    '" onmouseover="alert(2)',
    '<div hx-get="/admin/" hx-trigger="load">x</div>',
    "<img src=x onerror=alert(3)>",
]
RAW_MARKERS = ["<script>alert(1)", 'onmouseover="alert(2)', '<div hx-get="/admin/"', "<img src=x"]


@pytest.fixture
def evil_letters(r, mq_config) -> list[str]:
    make_topic(mq_config)
    return add_letters(
        r,
        mq_config,
        "orders",
        len(EVIL),
        payload=lambda i: EVIL[i],
        headers=lambda i: {"x-runtime-error-message": EVIL[i], EVIL[i][:20]: EVIL[i]},
        key=lambda i: EVIL[i],
    )


def _assert_inert(html: str) -> None:
    for marker in RAW_MARKERS:
        assert marker not in html, f"unescaped: {marker}"


def test_list_and_detail_escape_payloads_headers_and_keys(evil_letters) -> None:
    c = Client()
    c.force_login(role_user("op", "Operator"))
    page = c.get("/clusters/default/topics/orders/dlq/").content.decode()
    _assert_inert(page)
    assert "&lt;script&gt;" in page
    details = [
        c.get(f"/clusters/default/topics/orders/dlq/{dlq_id}/").content.decode()
        for dlq_id in evil_letters
    ]
    for detail in details:
        _assert_inert(detail)
    assert "&lt;div hx-get=&quot;/admin/&quot;" in details[2]


def test_replay_result_and_audit_page_escape(evil_letters) -> None:
    c = Client()
    c.force_login(role_user("op", "Operator"))
    c.post(
        f"/clusters/default/topics/orders/dlq/{evil_letters[0]}/replay/",
        {"reason": EVIL[0]},
        HTTP_HX_REQUEST="true",
    )
    assert AuditEvent.objects.filter(reason=EVIL[0]).exists()
    _assert_inert(c.get("/audit/").content.decode())
    detail = c.get(f"/clusters/default/topics/orders/dlq/{evil_letters[0]}/").content.decode()
    _assert_inert(detail)


def test_json_api_returns_data_not_markup(evil_letters) -> None:
    c = Client()
    c.force_login(role_user("v", "Viewer"))
    resp = c.get("/api/v1/clusters/default/topics/orders/dlq")
    assert resp["Content-Type"].startswith("application/json")
    payloads = {x["payload"] for x in json.loads(resp.content)["letters"]}
    assert payloads == set(EVIL)  # exact data for scripts; browsers never render it as HTML


def test_binary_payload_shown_as_hex(r, mq_config) -> None:
    make_topic(mq_config)
    ids = add_letters(r, mq_config, "orders", 1, payload=lambda i: b"\xff\xfe<script>\x00")
    c = Client()
    c.force_login(role_user("v", "Viewer"))
    body = c.get(f"/clusters/default/topics/orders/dlq/{ids[0]}/").content.decode()
    assert "ff fe 3c 73 63 72 69 70 74 3e 00" in body
    _assert_inert(body)
