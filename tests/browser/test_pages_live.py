"""The read pages in real Chromium: live overview, pending sorting, lease countdown, charts."""

import time

import pytest
from django.contrib.auth.models import Group, User
from playwright.sync_api import expect

from dashboard.permissions import roles_sync
from mqcore.producer import Producer
from mqcore.topics import Topics
from tests.integration.pages_support import collect, store_pass

pytestmark = [pytest.mark.browser, pytest.mark.redis, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def viewer(redis_url, console_r, settings):
    settings.COLLECT_INTERVAL_S = 1
    roles_sync()  # transactional tests flush the role groups the migrations created
    user = User.objects.create_user("browser-viewer", password="viewer-pass-123")
    user.groups.add(Group.objects.get_or_create(name="Viewer")[0])
    return "browser-viewer", "viewer-pass-123"


def test_overview_updates_without_reload(login, live_server, viewer, mq_config, artifacts_dir):
    Topics(mq_config).create("live", 1, groups=["g"])
    Producer(mq_config).send("live", "a")
    collect()
    page = login(*viewer)
    page.goto(f"{live_server.url}/clusters/default/")
    cell = page.locator('tr[data-topic="live"] td[data-col="lag"]')
    assert cell.inner_text().strip() == "1"
    page.evaluate("window.__noReload = true")
    producer = Producer(mq_config)
    for i in range(4):
        producer.send("live", f"b{i}")
    collect()
    expect(cell).to_have_text("5", timeout=10_000)
    assert page.evaluate("window.__noReload") is True
    page.screenshot(path=str(artifacts_dir / "pages-overview-live.png"), full_page=True)


def test_pending_sorts_by_idle_then_by_count(
    login, live_server, viewer, mq_config, r, artifacts_dir
):
    Topics(mq_config).create("jobs", 1, groups=["w"])
    producer = Producer(mq_config)
    ids = [producer.send("jobs", f"m{i}").id for i in range(3)]
    stream = mq_config.keys.partition("jobs", 0)
    r.xreadgroup("w", "c1", {stream: ">"}, count=3)
    for entry_id, (idle, count) in zip(ids, [(50_000, 1), (10_000, 9), (90_000, 2)], strict=True):
        r.xclaim(stream, "w", "c1", 0, [entry_id], idle=idle, retrycount=count)
    collect()
    page = login(*viewer)
    page.goto(f"{live_server.url}/clusters/default/topics/jobs/pending/?group=w")
    rows = page.locator("#pending-table tbody tr th code")
    assert rows.all_inner_texts() == [ids[2], ids[0], ids[1]]
    page.get_by_role("link", name="Deliveries").click()
    page.wait_for_url("**sort=count**")
    assert page.locator("#pending-table tbody tr th code").all_inner_texts() == [
        ids[1],
        ids[2],
        ids[0],
    ]
    assert page.locator("#pending-table tr.poison").count() == 1
    page.screenshot(path=str(artifacts_dir / "pages-pending-by-count.png"), full_page=True)


def test_lease_countdown_moves_and_charts_render(
    login, live_server, viewer, mq_config, r, artifacts_dir
):
    Topics(mq_config).create("leased", 1, groups=["g"])
    r.set(mq_config.keys.lease("leased", "g", 0), "worker-1", px=60_000)
    now = int(time.time() * 1000)
    store_pass(None, points=[("lag", "leased/g", 3.0)], now_ms=now - 120_000)
    collect(points=[("lag", "leased/g", 1.0)], now_ms=now)
    page = login(*viewer)
    page.goto(f"{live_server.url}/clusters/default/topics/leased/leases/")
    countdown = page.locator("[data-countdown-ms]").first
    first = int(countdown.get_attribute("data-countdown-ms"))
    expect(countdown).not_to_have_attribute("data-countdown-ms", str(first), timeout=5_000)
    deadline = time.monotonic() + 5
    while int(countdown.get_attribute("data-countdown-ms")) > first - 1500:
        assert time.monotonic() < deadline, "countdown did not move"
        page.wait_for_timeout(200)
    assert countdown.inner_text().endswith("s")
    page.screenshot(path=str(artifacts_dir / "pages-leases.png"), full_page=True)

    page.goto(f"{live_server.url}/clusters/default/topics/leased/")
    page.locator(".chart-grid").scroll_into_view_if_needed()  # plotly.js loads there
    page.wait_for_selector('[data-chart="lag"][data-rendered="plot"] .main-svg')
    assert page.locator('[data-chart="lag"] .scatterlayer .trace').count() == 1
    page.screenshot(path=str(artifacts_dir / "pages-topic-charts.png"), full_page=True)

    # The charts poll with the numbers: a new pass redraws them in place (no reload).
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.evaluate("window.__noReload = true")
    dlq = page.locator('[data-chart="dlq"]')
    assert dlq.get_attribute("data-rendered") == "empty"
    collect(points=[("lag", "leased/g", 7.0), ("dlq_length", "leased", 2.0)])
    expect(dlq).to_have_attribute("data-rendered", "plot", timeout=10_000)
    page.wait_for_function(
        "document.querySelector('[data-chart=lag]').data[0].y.includes(7)", timeout=10_000
    )
    assert int(page.locator('[data-chart="lag"]').get_attribute("data-revision")) >= 2
    assert page.evaluate("window.__noReload") is True
    assert not errors, errors  # no CSP violation, no script error
