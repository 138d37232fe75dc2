"""Retention journey in real Chromium: an Admin opens a topic's Retention tab, tries a rule
("what if"), sees which group holds it back, and trims; the slow group keeps its unread
entries."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.integration.dlq_support import PASSWORD, role_user
from tests.integration.raw_java import create_topic

pytestmark = [pytest.mark.browser, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

TOPIC = "/clusters/default/topics/orders/"
FAST = "fast-group"


def test_admin_trims_without_losing_unread_entries(login, live_server, r, mq_config) -> None:
    create_topic(r, mq_config.keys, "orders", 1, groups=(FAST,))
    key = mq_config.keys.partition("orders", 0)
    r.xgroup_create(key, "slow-group", id="0")
    for i in range(60):
        r.xadd(key, {"payload": f"m{i}"}, id=f"{1_000 + i}-0")
    fast = r.xreadgroup(FAST, "f1", {key: ">"}, count=60)[0][1]
    r.xack(key, FAST, *[e[0] for e in fast])
    slow = r.xreadgroup("slow-group", "s1", {key: ">"}, count=20)[0][1]
    r.xack(key, "slow-group", *[e[0] for e in slow])
    role_user("ada", "Admin")
    page = login("ada", PASSWORD)
    page.goto(f"{live_server.url}{TOPIC}")
    page.get_by_role("navigation", name="Topic").get_by_role("link", name="Retention").click()
    expect(page.locator("#retention-safe")).to_be_visible()
    page.fill("#r-maxlen", "5")
    page.get_by_role("button", name="What if").click()
    rules = page.locator("table.retention-rules tbody tr")
    expect(rules.first).to_contain_text("35 by slow-group")  # 55 wanted, only 20 consumed by all
    page.fill("#t-reason", "disk is filling")
    page.fill("#t-confirm", "orders")
    page.click("#trim-now")
    expect(page.locator("#trim-result")).to_contain_text("Deleted 20 entries")
    expect(page.locator("#trim-result")).to_contain_text("held back by group slow-group")
    assert r.xlen(key) == 40
    assert r.xinfo_groups(key)[1]["lag"] == 40
    # opting the slow group out: the housekeeper would no longer wait for it
    page.fill("#r-maxlen", "5")
    page.fill("#r-ignore", "slow-group")
    page.get_by_role("button", name="What if").click()
    expect(page.locator("#retention-risk")).to_contain_text("slow-group")
    first = page.locator("#retention-next tbody tr").first
    expect(first).to_contain_text("slow-group")
    expect(first).to_contain_text("35 entries")
    expect(first).to_contain_text("now")
