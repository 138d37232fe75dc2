"""Access administration in real Chromium: an Admin limits a user to one topic pattern and
marks it sensitive; "who can see what" shows it, and the user's own view agrees."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.integration.dlq_support import PASSWORD, make_topic, role_user
from tests.integration.pages_support import collect

pytestmark = [pytest.mark.browser, pytest.mark.redis, pytest.mark.django_db(transaction=True)]


def test_admin_scopes_a_user_and_sees_what_it_can_see(
    login, live_server, mq_config, browser
) -> None:
    for name in ("orders", "payments-eu"):
        make_topic(mq_config, name, 1)
    collect()
    role_user("ada", "Admin")
    role_user("vic", None)
    page = login("ada", PASSWORD)
    page.goto(f"{live_server.url}/access/")
    page.fill("#g-name", "payments-viewers")
    page.select_option("#g-role", "Viewer")
    page.fill("#g-scopes", "default/payments-*")
    page.fill("#g-reason", "payments team")
    page.get_by_role("button", name="Save group").click()
    expect(page.locator('#access-groups tr[data-group="scope:payments-viewers"]')).to_contain_text(
        "default/payments-*"
    )
    page.fill("#m-group", "payments-viewers")
    page.fill("#m-user", "vic")
    page.get_by_role("button", name="Apply").click()
    page.fill("#s-pattern", "payments-*")
    page.fill("#s-note", "card data")
    page.get_by_role("button", name="Mark sensitive").click()
    expect(page.locator("#access-sensitive")).to_contain_text("*/payments-*")
    page.locator('#access-users tr[data-user="vic"]').get_by_role("link").click()
    expect(page.locator("#access-summary")).to_contain_text("default/payments-*")
    expect(page.locator('tr[data-topic="payments-eu"]')).to_contain_text("masked")
    expect(page.locator('tr[data-topic="orders"]')).to_contain_text("no")

    context = browser.new_context()  # the viewer's own session
    viewer = context.new_page()
    viewer.goto(f"{live_server.url}/login/")
    viewer.fill("#id_username", "vic")
    viewer.fill("#id_password", PASSWORD)
    viewer.click("button[type=submit]")
    viewer.wait_for_load_state("networkidle")
    viewer.goto(f"{live_server.url}/clusters/default/")
    expect(viewer.get_by_role("link", name="payments-eu")).to_be_visible()
    expect(viewer.get_by_role("link", name="orders", exact=True)).to_have_count(0)
    expect(viewer.get_by_role("link", name="Access")).to_have_count(0)
    context.close()
