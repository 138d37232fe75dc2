"""The incident timeline in real Chromium: chart markers, the list filtered by kind."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User
from playwright.sync_api import expect

from dashboard.permissions import roles_sync
from tests.integration.test_timeline import _incident_passes

pytestmark = [pytest.mark.browser, pytest.mark.redis, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def viewer(redis_url, console_r, settings):
    settings.COLLECT_INTERVAL_S = 1
    roles_sync()  # transactional tests flush the role groups the migrations created
    user = User.objects.create_user("timeline-viewer", password="viewer-pass-123")
    user.groups.add(Group.objects.get_or_create(name="Viewer")[0])
    return "timeline-viewer", "viewer-pass-123"


def test_topic_charts_show_event_markers_and_timeline_filters_by_kind(
    login, live_server, viewer, mq_config, r, artifacts_dir
):
    _incident_passes(r, mq_config)  # real collector passes: lease expiry, DLQ burst, status
    page = login(*viewer)
    page.goto(f"{live_server.url}/clusters/default/topics/orders/")
    page.locator(".chart-grid").scroll_into_view_if_needed()  # plotly.js loads there
    lag = page.locator('[data-chart="lag"]')
    expect(lag).to_have_attribute("data-rendered", "plot", timeout=10_000)
    names = page.evaluate(
        "Array.from(document.querySelector('[data-chart=\"lag\"]').data || []).map(t => t.name)"
    )
    assert "events" in names
    assert lag.locator(".scatterlayer .trace path.point").count() >= 3  # one per event
    assert lag.locator(".shapelayer path").count() >= 3  # the dotted lines
    page.screenshot(path=str(artifacts_dir / "timeline-topic-markers.png"), full_page=True)

    page.get_by_role("navigation", name="Topic").get_by_role("link", name="Timeline").click()
    page.wait_for_url("**/topics/orders/timeline/")
    rows = page.locator("#timeline-events tbody tr")
    kinds = set(rows.evaluate_all("rs => rs.map(r => r.dataset.kind)"))
    assert {"lease", "dlq", "status"} <= kinds
    page.get_by_label("dlq").check()  # htmx updates the list, no reload
    page.wait_for_url("**kind=dlq**")
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-kind", "dlq")
    expect(rows.first).to_contain_text("40 dead letters since the last pass")
    page.get_by_label("lease").check()
    expect(rows.filter(has_text="expired (owner orders-b)")).to_have_count(1)
    assert set(rows.evaluate_all("rs => rs.map(r => r.dataset.kind)")) <= {"dlq", "lease"}
    page.screenshot(path=str(artifacts_dir / "timeline-filtered.png"), full_page=True)
    page.reload()  # the filter is in the URL: a plain GET shows the same list
    expect(page.get_by_label("dlq")).to_be_checked()
    expect(rows.filter(has_text="40 dead letters")).to_have_count(1)
