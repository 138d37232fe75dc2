"""Retry browser journey in real Chromium: an Operator opens the Retries page from the
main navigation, picks a topic, filters to the scheduled items, retries one now, deletes
the selected due ones with a reason, and sees each step in the list and in Redis."""

from __future__ import annotations

import json
import re
import time

import pytest
from playwright.sync_api import expect

from tests.integration.dlq_support import PASSWORD, role_user
from tests.integration.raw_java import create_topic
from tests.integration.retry_items import schedule

pytestmark = [pytest.mark.browser, pytest.mark.redis, pytest.mark.django_db(transaction=True)]


def test_operator_retries_and_deletes_items(login, live_server, r, mq_config) -> None:
    from dashboard.permissions import roles_sync
    from tests.integration.pages_support import collect

    roles_sync()  # transactional tests flush the role groups the migrations created
    keys = mq_config.keys
    create_topic(r, keys, "orders", 2)
    now = int(time.time() * 1000)
    due = [
        schedule(r, keys, "orders", i % 2, f"<b>due {i}</b>", due_ms=now - 60_000 + i, key="k")
        for i in range(3)
    ]
    later = schedule(
        r, keys, "orders", 1, "later <script>alert(1)</script>", due_ms=now + 3_600_000
    )
    r.hset(later, "headers", json.dumps({"x-runtime-error-message": "timeout <i>db</i>"}))
    collect()
    role_user("olga", "Operator")
    page = login("olga", PASSWORD)
    page.goto(f"{live_server.url}/clusters/default/")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Retries").click()
    page.get_by_role("link", name="orders").click()
    expect(page.locator("#retries-summary")).to_contain_text("4 items in the retry set")
    expect(page.locator("#retries-summary")).to_contain_text("3 due now")
    page.select_option("#rf-state", "scheduled")
    page.get_by_role("button", name="Apply").click()
    rows = page.locator("#retries-table tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("timeout <i>db</i>")  # shown as text, not markup
    assert "state=scheduled" in page.url
    rows.first.get_by_role("button", name=re.compile(r"^Retry now item ")).click()
    expect(page.locator("body")).to_contain_text("Retried 1 retry item")
    assert r.xlen(keys.partition("orders", 1)) == 1
    assert not r.exists(later)
    page.goto(f"{live_server.url}/clusters/default/topics/orders/retries/?state=due")
    boxes = page.locator("#retries-table tbody input[type=checkbox]")
    expect(boxes).to_have_count(3)
    boxes.nth(0).check()
    boxes.nth(1).check()
    page.fill("#ra-reason", "poison messages")
    page.once("dialog", lambda d: d.accept())
    page.get_by_role("button", name="Delete selected").click()
    expect(page.locator("body")).to_contain_text("Deleted 2 retry items")
    expect(page.locator("#retries-table tbody tr")).to_have_count(1)
    assert r.zrange(keys.retry_zset("orders"), 0, -1) == [due[2].encode()]
