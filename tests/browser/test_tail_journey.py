"""Live tail journey in real Chromium: a Viewer opens a topic's Messages tab, starts the
live tail, sees messages produced meanwhile appear (newest first, a hostile key as text),
pauses (nothing new shows), resumes (what arrived meanwhile shows), and with a low rate
sees the skipped counter count what was passed over."""

from __future__ import annotations

import json
import time

import pytest
from playwright.sync_api import expect

from mqcore.producer import Producer
from tests.integration.dlq_support import PASSWORD, make_topic, role_user

pytestmark = [pytest.mark.browser, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

XSS = "<img src=x onerror=alert(1)>"


def send(r, mq_config, numbers: range, key: str | None = None) -> None:
    with Producer(mq_config, r) as producer:
        for i in numbers:
            payload = json.dumps({"n": i, "note": "<b>x</b>"})
            producer.send("orders", payload, key=key or f"k{i}", partition=i % 2)
            time.sleep(0.002)  # one millisecond each: the merge by id is the send order


def counts(page) -> tuple[int, int]:
    shown = int(page.locator("#tail-shown").inner_text().replace(",", ""))
    return shown, int(page.locator("#tail-skipped").inner_text().replace(",", ""))


def test_viewer_tails_pauses_resumes_and_sees_skips(
    login, live_server, r, mq_config, artifacts_dir
) -> None:
    make_topic(mq_config, "orders", 2)
    send(r, mq_config, range(5))  # before the tail opens: never shown
    role_user("tess", "Viewer")
    page = login("tess", PASSWORD)
    page.goto(f"{live_server.url}/clusters/default/topics/orders/messages/")
    page.click("#tail-link")
    expect(page.locator("#tail-state")).to_have_text("Live")
    rows = page.locator("#tail-rows li")
    expect(rows).to_have_count(0)

    send(r, mq_config, range(5, 8))
    send(r, mq_config, range(8, 9), key=XSS)
    expect(rows).to_have_count(4)
    assert rows.first.locator(".tail-key").inner_text() == XSS  # text, never markup
    assert page.locator("#tail-rows img").count() == 0
    assert rows.nth(1).locator(".tail-key").inner_text() == "k7"
    assert counts(page) == (4, 0)
    page.screenshot(path=str(artifacts_dir / "tail-live.png"), full_page=True)

    page.click("#tail-pause")
    expect(page.locator("#tail-state")).to_have_text("Paused")
    send(r, mq_config, range(9, 12))
    page.wait_for_timeout(2500)  # two poll periods: nothing polls while paused
    expect(rows).to_have_count(4)
    page.click("#tail-resume")
    expect(page.locator("#tail-state")).to_have_text("Live")
    expect(rows).to_have_count(7)
    assert rows.first.locator(".tail-key").inner_text() == "k11"

    # at most 2 a second: the rest is passed over and counted
    page.fill("#t-rate", "2")
    page.click("#tail-start")
    expect(page.locator("#tail-state")).to_have_text("Live")
    send(r, mq_config, range(12, 32))
    deadline = time.monotonic() + 15
    while sum(counts(page)) < 20 and time.monotonic() < deadline:
        page.wait_for_timeout(250)
    shown, skipped = counts(page)
    assert shown + skipped == 20
    assert skipped >= 10
    expect(rows).to_have_count(shown)
    expect(page.locator("#tail-skipped")).to_have_class("status-WARN")
    page.screenshot(path=str(artifacts_dir / "tail-skipped.png"), full_page=True)
