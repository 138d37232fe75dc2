"""Consumer metrics journey in real Chromium: real mqcore consumers process, fail, retry and
dead-letter messages; a Viewer opens the topic, goes to the Metrics tab, sees each consumer
(slowest first, a hostile name shown as text), the charts drawn, and switches the window."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import expect

from mqcore.consumer import Consumer, ConsumerOptions, Outcome
from mqcore.models import Message
from mqcore.producer import OutgoingMessage, Producer
from mqcore.topics import Topics
from tests.harness.celery_procs import wait_for
from tests.integration.dlq_support import PASSWORD, role_user

pytestmark = [pytest.mark.browser, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

SLOW = "slow <b>worker</b>"


def _run(mq_config, name: str, partition: int, pause_s: float) -> Consumer:
    def handler(message: Message) -> Outcome | None:
        time.sleep(pause_s)
        if message.payload == "fail":
            return Outcome.FAIL
        if message.payload == "boom":
            raise RuntimeError("boom")
        return None

    options = ConsumerOptions(
        group="billing", name=name, max_partitions=1, block_ms=100, lease_ttl_ms=2000,
        renew_interval_ms=300, rebalance_interval_ms=200, retry_move_interval_ms=50,
    )  # fmt: skip
    with Producer(mq_config) as producer:
        batch = ["ok"] * 8 + ["fail", "boom"]
        producer.send_many("orders", [OutgoingMessage(p, partition=partition) for p in batch])
    consumer = Consumer(mq_config, "orders", handler, options)
    consumer.start()
    return consumer


def test_viewer_reads_consumer_metrics(login, live_server, r, mq_config) -> None:
    from dashboard.permissions import roles_sync
    from tests.integration.pages_support import collect

    roles_sync()
    Topics(mq_config).create("orders", 2, groups=["billing"])
    fast = _run(mq_config, "fast-1", 0, 0.0)
    slow = _run(mq_config, SLOW, 1, 0.06)
    try:
        wait_for(lambda: fast.stats.dead + slow.stats.dead == 4, timeout=30, what="4 letters")
    finally:
        fast.stop(10)
        slow.stop(10)
    collect()
    role_user("vera", "Viewer")
    page = login("vera", PASSWORD)
    page.goto(f"{live_server.url}/clusters/default/topics/orders/")
    page.get_by_role("navigation", name="Topic").get_by_role("link", name="Metrics").click()
    rows = page.locator("#metrics-table tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.nth(0).locator("th")).to_have_text(SLOW)  # slowest first, as text
    expect(rows.nth(1).locator("th")).to_have_text("fast-1")
    for row in (rows.nth(0), rows.nth(1)):
        cells = row.locator("td")
        expect(cells.nth(0)).to_have_text("13")  # 8 ok, 1 fail, boom 4 times
        expect(cells.nth(2)).to_have_text("5")  # failed
        expect(cells.nth(4)).to_have_text("3")  # retried
        expect(cells.nth(5)).to_have_text("2")  # dead-lettered
    assert float(rows.nth(0).locator("td").nth(7).inner_text()) >= 50  # p95 ms of the slow
    page.locator("[data-chart=throughput]").scroll_into_view_if_needed()
    expect(page.locator("[data-chart=throughput]")).to_have_attribute("data-rendered", "plot")
    expect(page.locator("[data-chart=errors]")).to_have_attribute("data-rendered", "plot")
    assert page.locator("b", has_text="worker").count() == 0  # the name never became markup
    page.select_option("#mf-window", "7d")
    page.get_by_role("button", name="Apply").click()
    expect(page.locator("#metrics-live h2")).to_contain_text("last 7d")
    expect(rows).to_have_count(2)
    assert "window=7d" in page.url
