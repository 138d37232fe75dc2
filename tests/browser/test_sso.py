"""Single sign-on end to end: real Chromium, the console's live server, and a real
OpenID Connect provider process (django-oauth-toolkit under gunicorn, tests/oidc_provider)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User

from dashboard.permissions import ADMIN, VIEWER, role_of
from tests.harness.oidc_provider import OIDCProvider

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

USERS = [
    {"username": "alice", "password": "alice-pass-123", "groups": ["sre-admins", "staff"]},
    {"username": "victor", "password": "victor-pass-123", "groups": ["sre-viewers"]},
    {"username": "nora", "password": "nora-pass-123", "groups": ["marketing"]},
    {"username": "nogroups", "password": "nogroups-pass-123", "groups": []},
]
ROLE_MAP = {"sre-admins": "Admin", "sre-operators": "Operator", "sre-viewers": "Viewer"}


@pytest.fixture(scope="module")
def provider(live_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OIDCProvider]:
    idp = OIDCProvider(tmp_path_factory.mktemp("oidc-provider"), live_server.url)
    idp.start(USERS)
    yield idp
    idp.stop()


@pytest.fixture
def sso(provider: OIDCProvider, settings: Any) -> OIDCProvider:
    """The console configured for the provider, with local accounts still on."""
    for name, value in provider.console_settings().items():
        setattr(settings, name, value)
    settings.OIDC_ROLE_MAP = ROLE_MAP
    settings.AUTHENTICATION_BACKENDS = [
        "axes.backends.AxesStandaloneBackend",
        "django.contrib.auth.backends.ModelBackend",
        "dashboard.sso.backend.ConsoleOIDCBackend",
    ]
    return provider


def sso_login(page: Any, console_url: str, username: str) -> Any:
    password = next(u["password"] for u in USERS if u["username"] == username)
    page.goto(f"{console_url}/login/")
    page.get_by_role("link", name="Log in with single sign-on").click()
    page.wait_for_selector("#idp-username")
    page.fill("#idp-username", username)
    page.fill("#idp-password", password)
    with page.expect_navigation(url=lambda u: u.startswith(console_url)):
        page.click("#idp-submit")
    page.wait_for_load_state("networkidle")
    return page


def post_silence(page: Any) -> int:
    """POST an Admin-only action (silence an alert) from the page, with its CSRF token."""
    return int(
        page.evaluate(
            """async () => {
              const token = document.querySelector('input[name=csrfmiddlewaretoken]').value;
              const body = new URLSearchParams({cluster: 'default', alert: 'no-such-alert',
                                                 kind: 'silence', duration: '1h', reason: 'test'});
              const answer = await fetch('/alerts/mute/', {method: 'POST', body,
                                         headers: {'X-CSRFToken': token}});
              return answer.status;
            }"""
        )
    )


def test_admin_group_logs_in_as_admin_and_logout_ends_both_sessions(
    sso, page, live_server, artifacts_dir
) -> None:
    console = live_server.url
    sso_login(page, console, "alice")
    assert page.url.startswith(f"{console}/clusters/default/")
    who = page.locator(".who").inner_text()
    assert "oidc:alice" in who
    assert "Admin" in who
    user = User.objects.get(username="oidc:alice")
    assert role_of(user) == ADMIN
    assert not user.has_usable_password()
    assert user.email == "alice@example.test"
    assert post_silence(page) != 403  # the alert does not exist, but the role may act
    page.screenshot(path=str(artifacts_dir / "sso-admin.png"), full_page=True)

    page.get_by_role("button", name="Log out").click()
    page.wait_for_url(f"{console}/login/")
    page.goto(f"{console}/clusters/default/")
    assert "/login/" in page.url  # the console session is over
    page.get_by_role("link", name="Log in with single sign-on").click()
    page.wait_for_selector("#idp-username")  # so is the provider's: it asks again
    assert page.url.startswith(sso.url)


def test_viewer_group_is_viewer_and_group_changes_apply_at_next_login(
    sso, page, live_server
) -> None:
    console = live_server.url
    sso_login(page, console, "victor")
    assert "Viewer" in page.locator(".who").inner_text()
    assert role_of(User.objects.get(username="oidc:victor")) == VIEWER
    assert post_silence(page) == 403

    page.get_by_role("button", name="Log out").click()
    page.wait_for_url(f"{console}/login/")
    sso.set_users([{**USERS[1], "groups": ["sre-admins"]}])
    try:
        sso_login(page, console, "victor")
        who = page.locator(".who").inner_text()
        assert "Admin" in who
        assert "Viewer" not in who
        assert post_silence(page) != 403
    finally:
        sso.set_users([USERS[1]])


@pytest.mark.parametrize(
    ("username", "reason"),
    [
        ("nora", "none of your groups (marketing) gives access"),
        ("nogroups", "did not send a 'groups' claim"),
    ],
)
def test_unmapped_or_missing_groups_get_the_refusal_page(
    sso, page, live_server, artifacts_dir, username, reason
) -> None:
    console = live_server.url
    statuses: list[int] = []
    page.on(
        "response",
        lambda r: statuses.append(r.status) if "/oidc/callback/" in r.url else None,
    )
    sso_login(page, console, username)
    assert statuses == [403]
    assert page.get_by_role("heading", name="Single sign-on refused").is_visible()
    assert reason in page.get_by_role("alert").inner_text()
    page.screenshot(path=str(artifacts_dir / f"sso-refused-{username}.png"), full_page=True)
    assert not User.objects.filter(username=f"oidc:{username}").exists()
    page.goto(f"{console}/clusters/default/")
    assert "/login/" in page.url
