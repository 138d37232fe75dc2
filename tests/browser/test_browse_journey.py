"""Message browser journey in real Chromium: an Operator browses a topic across partitions,
filters with an expression, pages on, opens a message and its delivery state, and produces
a test message from the browser page; a bad expression shows its error, not a 500."""

from __future__ import annotations

import json
import time

import pytest
from playwright.sync_api import expect

from mqcore.producer import Producer
from tests.integration.dlq_support import PASSWORD, make_topic, role_user

pytestmark = [pytest.mark.browser, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

BROWSE = "/clusters/default/topics/orders/messages/"


@pytest.fixture
def orders(r, mq_config) -> list[str]:
    make_topic(mq_config, "orders", 3)
    sent = []
    with Producer(mq_config, r) as producer:
        for i in range(30):
            payload = {"customer": f"c-{i % 3}", "amount": i * 25, "note": "<b>x</b>"}
            sent.append(producer.send("orders", json.dumps(payload), key=f"k{i}", partition=i % 3))
            time.sleep(0.002)  # one millisecond each: the merge by id is the send order
    key = mq_config.keys.partition("orders", 1)
    r.xreadgroup("default-group", "worker-7", {key: ">"}, count=50)  # partition 1: pending
    return [s.id for s in sent]


def test_operator_browses_filters_opens_and_produces(
    login, live_server, r, mq_config, orders, artifacts_dir
) -> None:
    role_user("olga", "Operator")
    page = login("olga", PASSWORD)
    page.goto(f"{live_server.url}/clusters/default/topics/orders/")
    page.get_by_role("link", name="Messages").click()
    page.wait_for_selector("#browse-table")
    rows = page.locator("#browse-table tbody tr")
    expect(rows).to_have_count(30)
    assert rows.first.get_attribute("data-partition") == "2"  # k29, newest, on partition 2

    # an expression over the JSON payload, newest first, two per page
    page.fill("#b-where", 'payload.customer == "c-1" and payload.amount > 100')
    page.fill("#b-limit", "2")
    page.click("#browse-submit")
    page.wait_for_selector("#browse-table")
    expect(rows).to_have_count(2)
    keys = rows.locator("td:nth-child(3)").all_inner_texts()
    assert keys == ["k28", "k25"]
    expect(page.locator("#browse-scan")).to_contain_text("scanned")
    page.click("#browse-next")
    page.wait_for_selector("#browse-table")
    assert rows.locator("td:nth-child(3)").all_inner_texts() == ["k22", "k19"]
    page.screenshot(path=str(artifacts_dir / "browse-filtered.png"), full_page=True)

    # a bad expression: the form again with the error
    page.fill("#b-where", 'payload.customer = "c-1"')
    page.click("#browse-submit")
    expect(page.locator("#browse-error")).to_contain_text("==")

    # open a message of partition 1: pending in default-group with worker-7
    page.fill("#b-where", "")
    page.fill("#b-key", "k4")
    page.click("#browse-submit")
    page.locator("#browse-table tbody tr").first.get_by_role("link").click()
    page.wait_for_selector("#delivery-table")
    row = page.locator('#delivery-table tr[data-group="default-group"]')
    expect(row).to_have_attribute("data-state", "pending")
    expect(row).to_contain_text("worker-7")
    expect(page.locator("#dead-letters-list")).to_contain_text("Not in the DLQ")
    page.screenshot(path=str(artifacts_dir / "message-delivery.png"), full_page=True)

    # produce a test message: from the topic page's link to the open form
    page.goto(f"{live_server.url}/clusters/default/topics/orders/")
    page.click("#produce-link")
    expect(page.locator("#p-payload")).to_be_visible()
    page.fill("#p-payload", '{"customer": "c-test", "amount": 1}')
    page.fill("#p-key", "test-key")
    page.fill("#p-partition", "2")
    page.fill("#p-headers", "source=console")
    page.click("#produce-submit")
    page.wait_for_selector("#delivery-table")
    expect(page.locator(".messages")).to_contain_text("Produced")
    expect(page.locator("#headers-table")).to_contain_text("console")
    page.goto(f"{live_server.url}{BROWSE}?where=payload.customer+%3D%3D+%22c-test%22")
    expect(page.locator("#browse-table tbody tr")).to_have_count(1)
    newest = r.xrevrange(mq_config.keys.partition("orders", 2), count=1)[0][1]
    assert newest[b"key"] == b"test-key"


def test_viewer_gets_no_produce_form(login, live_server, orders) -> None:
    role_user("vera", "Viewer")
    page = login("vera", PASSWORD)
    page.goto(f"{live_server.url}{BROWSE}")
    page.wait_for_selector("#browse-table")
    assert page.locator("#produce-form").count() == 0
    page.goto(f"{live_server.url}/clusters/default/topics/orders/")
    assert page.locator("#produce-link").count() == 0
