"""The README's screenshots, taken from the console as it is (``make screenshots``).

Demo-like data (``scripts/lighthouse_data.seed``: three topics with lag, pending entries,
leases and dead letters, then a dozen real collector passes a second apart, ``orders``
lagging more at each; then one of its consumers stops), shown to an Admin in real Chromium
at a desktop's 1280 px (and the topic page at a phone's 390 px), in the light theme. The
PNGs land in ``$SCREENSHOTS_DIR`` (``make screenshots`` sets it to ``docs/img``), else in
``test-artifacts/screenshots``: every run of the suite checks that the pages still draw.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group, User

from dashboard.clusters import cluster_config
from dashboard.collectors.passes import collect_cluster
from dashboard.permissions import roles_sync
from scripts.lighthouse_data import seed
from tests.browser.tour import C, log_in

pytestmark = [pytest.mark.browser, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

PASSWORD = "screenshots-pass-123"
VIEWPORT = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
MAX_HEIGHT = 1100  # a long page is cut here: the README shows its top
# name of the PNG: (path, what shows once the page is ready)
SHOTS = {
    "overview": (f"{C}/", "#overview-table"),
    "topic": (f"{C}/topics/orders/", '[data-chart="lag"][data-rendered="plot"]'),
    "messages": (f"{C}/topics/orders/messages/?where=payload.n+%3E%3D+370", "#browse-table"),
    "dead-letters": (f"{C}/topics/orders/dlq/", "#dlq-table"),
    "timeline": (f"{C}/timeline/", "#timeline-events"),
    "retention": (f"{C}/topics/orders/retention/?maxlen=20&max_age=1d", "#retention-view"),
    "leases": (f"{C}/topics/orders/leases/?group=billing", "#leases-table"),
}


def test_screenshots_of_the_main_pages(
    browser: Any,
    live_server: Any,
    settings: Any,
    r: Any,
    console_r: Any,
    artifacts_dir: Path,
) -> None:
    settings.COLLECT_INTERVAL_S = 1
    settings.STATUS_WINDOW_SAMPLES = 2  # statuses decided over two samples: lag rises show
    roles_sync()  # transactional tests flush the role groups the migrations created
    seed()
    # a consumer stops: its lease lapses and the next passes see it (the timeline shows it)
    cfg = cluster_config("default")
    cfg.client().delete(cfg.keys.lease("orders", "billing", 1))
    assert collect_cluster("default", claim=False).stored
    time.sleep(1)
    assert collect_cluster("default", claim=False).stored
    user = User.objects.create_user("sre", password=PASSWORD)
    user.groups.add(Group.objects.get(name="Admin"))
    out = Path(os.environ.get("SCREENSHOTS_DIR") or artifacts_dir / "screenshots")
    out.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(viewport=VIEWPORT, color_scheme="light")
    page = context.new_page()
    page.set_default_timeout(15_000)
    try:
        log_in(page, live_server.url)("sre", PASSWORD)
        for name, (path, ready) in SHOTS.items():
            page.goto(live_server.url + path)
            page.wait_for_load_state("networkidle")
            if page.locator(".chart-grid").count():  # plotly.js loads when charts are near
                page.locator(".chart-grid").scroll_into_view_if_needed()
            page.wait_for_selector(ready)
            page.wait_for_load_state("networkidle")
            page.evaluate("window.scrollTo(0, 0)")
            height = min(page.evaluate("document.scrollingElement.scrollHeight"), MAX_HEIGHT)
            png = out / f"{name}.png"
            page.screenshot(
                path=str(png),
                full_page=True,
                clip={"x": 0, "y": 0, "width": VIEWPORT["width"], "height": height},
            )
            assert png.stat().st_size > 10_000, name  # drew something
        # and a phone's view of the topic page (its window only)
        context.close()
        context = browser.new_context(viewport=PHONE, is_mobile=True, color_scheme="light")
        page = context.new_page()
        log_in(page, live_server.url)("sre", PASSWORD)
        page.goto(live_server.url + SHOTS["topic"][0])
        page.wait_for_load_state("networkidle")
        page.screenshot(path=str(out / "topic-phone.png"))
    finally:
        context.close()
