"""Group position journey in real Chromium: an Admin rewinds a group to earliest after a dry
run and a typed confirmation; an Operator does not get the link."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from dashboard.collectors.passes import collect_cluster
from tests.integration.dlq_support import PASSWORD, make_topic, role_user

pytestmark = [pytest.mark.browser, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

TOPIC = "/clusters/default/topics/orders/"
G = "default-group"


@pytest.fixture
def consumed(r, mq_config, console_r) -> str:
    make_topic(mq_config, "orders", 2)
    key = mq_config.keys.partition("orders", 0)
    for ms in (1000, 2000, 3000):
        r.xadd(key, {"payload": "x"}, id=f"{ms}-0")
    r.xreadgroup(G, "c1", {key: ">"}, count=3)
    r.xack(key, G, "1000-0", "2000-0", "3000-0")
    collect_cluster("default", claim=False)  # a real pass: the next one diffs against it
    return key


def test_admin_rewinds_a_group_to_earliest(login, live_server, r, consumed, artifacts_dir) -> None:
    role_user("ada", "Admin")
    page = login("ada", PASSWORD)
    page.goto(f"{live_server.url}{TOPIC}")
    page.locator(f'section.group[data-group="{G}"]').get_by_role(
        "link", name="Move position"
    ).click()
    page.wait_for_selector("#position-form")
    page.get_by_label("earliest").check()
    page.click("#dry-run")
    page.wait_for_selector("#plan-summary")
    assert "deliver 3 again" in page.inner_text("#plan-summary")
    assert page.locator('#plan tr[data-partition="0"]').count() == 1
    assert r.xinfo_groups(consumed)[0]["last-delivered-id"] == b"3000-0"  # dry run only
    page.fill("#m-reason", "reprocess after the fix")
    page.fill("#m-confirm", G)
    page.click("#move-position")
    page.wait_for_selector("#position-result")
    assert "3 delivered again" in page.inner_text("#position-result")
    group = r.xinfo_groups(consumed)[0]
    assert (group["last-delivered-id"], group["lag"]) == (b"0-0", 3)
    page.screenshot(path=str(artifacts_dir / "position-after-rewind.png"), full_page=True)

    # the move is on the topic's incident timeline, and the next pass shows REWIND
    collect_cluster("default", claim=False)
    page.goto(f"{live_server.url}{TOPIC}timeline/")
    moves = page.locator('#timeline-events tbody tr[data-kind="position"]')
    expect(moves).to_have_count(1)
    expect(moves.first).to_contain_text("3 entries will be delivered again")
    expect(page.locator('#timeline-events tbody tr[data-kind="status"]').first).to_contain_text(
        "REWIND"
    )
    page.goto(f"{live_server.url}{TOPIC}")
    expect(page.locator(f'section.group[data-group="{G}"] .status-REWIND').first).to_be_visible()


def test_operator_does_not_see_the_link(login, live_server, consumed) -> None:
    role_user("olga", "Operator")
    page = login("olga", PASSWORD)
    page.goto(f"{live_server.url}{TOPIC}")
    page.wait_for_selector(f'section.group[data-group="{G}"]')
    assert page.get_by_role("link", name="Move position").count() == 0
