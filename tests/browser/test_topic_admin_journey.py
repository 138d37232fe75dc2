"""Topic and group administration in real Chromium: an Admin creates a topic from the
overview, grows it, trims it after a dry run (the retention floor keeps the unread entry),
creates a group and deletes it after its dry run, then deletes the topic: refused while a
group has unread entries, done when forced. Every step types its confirmation."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from mqcore.topics import Topics
from tests.integration.dlq_support import PASSWORD, role_user

pytestmark = [pytest.mark.browser, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

G = "default-group"


def test_admin_creates_grows_trims_and_deletes(
    login, live_server, r, mq_config, artifacts_dir
) -> None:
    role_user("ada", "Admin")
    page = login("ada", PASSWORD)
    topics = Topics(mq_config)

    page.goto(f"{live_server.url}/clusters/default/")
    page.click("#create-topic-link")
    page.fill("#t-name", "payments")
    page.fill("#t-partitions", "2")
    page.fill("#t-reason", "new payments service")
    page.click("#create-topic")
    expect(page.locator(".messages")).to_contain_text("Created topic payments with 2 partitions")
    assert topics.partition_count("payments") == 2
    assert r.hget(mq_config.keys.meta("payments"), "partitionCount") == b"2"

    page.fill("#grow-partitions", "3")
    page.fill("#grow-reason", "more consumers")
    page.fill("#grow-confirm", "payments")
    page.click("#grow-topic")
    expect(page.locator(".messages")).to_contain_text("from 2 to 3 partitions")
    assert topics.partition_count("payments") == 3

    # four entries; the group read and acknowledged three: one stays unread
    key = mq_config.keys.partition("payments", 0)
    for ms in (1000, 2000, 3000, 4000):
        r.xadd(key, {"payload": "x"}, id=f"{ms}-0")
    r.xreadgroup(G, "c1", {key: ">"}, count=3)
    r.xack(key, G, "1000-0", "2000-0", "3000-0")

    page.fill("#trim-maxlen", "0")
    page.click("#trim-dry-run")
    summary = page.locator("#trim-summary")
    expect(summary).to_contain_text("would delete 3 entries")
    expect(summary).to_contain_text("keeps 1 entries")
    expect(page.locator("#trim-partitions")).to_contain_text(G)
    assert r.xlen(key) == 4  # a dry run only
    page.fill("#trim-reason", "disk")
    page.fill("#trim-confirm", "payments")
    page.click("#trim-topic")
    expect(page.locator(".messages")).to_contain_text("Trimmed 3 entries from payments")
    assert [e[0] for e in r.xrange(key)] == [b"4000-0"]

    page.fill("#g-name", "audit")
    page.select_option("#g-start", "earliest")
    page.fill("#g-reason", "audit trail")
    page.click("#create-group")
    expect(page.locator(".messages")).to_contain_text("Created group audit on payments")
    assert "audit" in topics.groups("payments")
    page.locator('tr[data-group="audit"]').get_by_role("link", name="Delete…").click()
    expect(page.locator("#group-summary")).to_contain_text("0 leased, 0 pending")
    page.fill("#gd-reason", "not needed")
    page.fill("#gd-confirm", "audit")
    page.click("#delete-group")
    expect(page.locator(".messages")).to_contain_text("Deleted group audit from payments")
    assert "audit" not in topics.groups("payments")

    page.click("#delete-dry-run")
    expect(page.locator("#delete-refused")).to_contain_text(G)
    page.fill("#del-reason", "retired")
    page.fill("#del-confirm", "payments")
    page.click("#delete-topic")
    expect(page.locator("body")).to_contain_text("unread or pending entries")
    assert topics.exists("payments")

    page.goto(f"{live_server.url}/clusters/default/topics/payments/admin/")
    page.click("#delete-dry-run")
    page.fill("#del-reason", "retired")
    page.fill("#del-confirm", "payments")
    page.check("#del-force")
    page.screenshot(path=str(artifacts_dir / "topic-delete-forced.png"), full_page=True)
    page.click("#delete-topic")
    expect(page.locator(".messages")).to_contain_text("Deleted topic payments")
    assert not topics.exists("payments")
    assert not r.exists(key)


def test_operator_sees_no_admin_links(login, live_server, mq_config) -> None:
    Topics(mq_config).create("orders", 1)
    role_user("olga", "Operator")
    page = login("olga", PASSWORD)
    page.goto(f"{live_server.url}/clusters/default/")
    expect(page.locator("h1")).to_contain_text("Overview")
    assert page.locator("#create-topic-link").count() == 0
    page.goto(f"{live_server.url}/clusters/default/topics/orders/")
    assert page.locator("#admin-link").count() == 0
