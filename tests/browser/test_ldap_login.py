"""LDAP login end to end: real Chromium, the console's live server and a private slapd
(tests/harness/slapd.py). Users log in through the login form with their directory
password and see what their mapped role and topic scope allow."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.test_sso import post_silence
from tests.harness.slapd import PrivateSlapd, running_slapd
from tests.integration.dlq_support import make_topic
from tests.integration.pages_support import collect

pytestmark = [pytest.mark.browser, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

ROLE_MAP = {
    "sre-admins": "Admin",
    "sre-viewers": "Viewer",
    "payments-team": {"role": "Viewer", "topics": ["payments-*"]},
}


@pytest.fixture(scope="module")
def slapd() -> Iterator[PrivateSlapd]:
    users = ("alice", "victor", "paula", "nora")
    groups = {
        "sre-admins": ["alice"],
        "sre-viewers": ["victor"],
        "payments-team": ["paula"],
        "marketing": ["nora"],
    }
    with running_slapd(users, groups) as server:
        yield server


@pytest.fixture
def ldap(slapd: PrivateSlapd, settings: Any) -> PrivateSlapd:
    for name, value in slapd.console_settings(ROLE_MAP).items():
        setattr(settings, name, value)
    return slapd


def test_ldap_users_get_the_pages_their_groups_allow(
    ldap, login, live_server, mq_config, browser, artifacts_dir
) -> None:
    for name in ("orders", "payments-eu"):
        make_topic(mq_config, name, 1)
    collect()
    console = live_server.url

    page = login("alice", "alice-password")
    assert page.url.startswith(f"{console}/clusters/default/")
    who = page.locator(".who").inner_text()
    assert "ldap:alice" in who
    assert "Admin" in who
    expect(page.get_by_role("link", name="orders", exact=True)).to_be_visible()
    expect(page.get_by_role("link", name="Access")).to_be_visible()
    assert post_silence(page) != 403  # the alert does not exist, but the role may act
    page.screenshot(path=str(artifacts_dir / "ldap-admin.png"), full_page=True)
    page.get_by_role("button", name="Log out").click()
    page.wait_for_url(f"{console}/login/")

    page = login("victor", "victor-password")
    assert "Viewer" in page.locator(".who").inner_text()
    expect(page.get_by_role("link", name="orders", exact=True)).to_be_visible()
    expect(page.get_by_role("link", name="Access")).to_have_count(0)
    assert post_silence(page) == 403
    page.get_by_role("button", name="Log out").click()
    page.wait_for_url(f"{console}/login/")

    page = login("paula", "paula-password")  # Viewer on payments-* only
    page.goto(f"{console}/clusters/default/")
    expect(page.get_by_role("link", name="payments-eu")).to_be_visible()
    expect(page.get_by_role("link", name="orders", exact=True)).to_have_count(0)
    assert page.goto(f"{console}/clusters/default/topics/orders/").status == 403


def test_wrong_password_and_unmapped_groups_are_refused(ldap, login, live_server) -> None:
    page = login("alice", "not-her-password")
    expect(page.get_by_role("alert")).to_contain_text("Wrong username or password.")
    assert page.url.endswith("/login/")

    statuses: list[int] = []
    page.on("response", lambda r: statuses.append(r.status) if "/login/" in r.url else None)
    page = login("nora", "nora-password")
    assert 403 in statuses
    body = page.locator("body").inner_text()
    assert "none of your groups (marketing) gives access" in body
    page.goto(f"{live_server.url}/clusters/default/")
    assert "/login/" in page.url  # no session was opened
