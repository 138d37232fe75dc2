"""SSO accounts and pages without a browser: group sync at every login, topic scopes,
local accounts switched off, refusals and logout answered without a 500, the audit name."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from dashboard.models import AuditEventType, GroupTopicScope
from dashboard.permissions import ADMIN, VIEWER, Action, has_action, role_of
from dashboard.services.audit import Actor, audit_record
from dashboard.sso.accounts import sync_user
from dashboard.sso.mapping import SSORefused, identity_from_claims, parse_role_map

pytestmark = pytest.mark.django_db

ROLE_MAP = parse_role_map(
    {
        "sre-admins": "Admin",
        "sre-viewers": "Viewer",
        "orders-oncall": {"role": "Operator", "topics": ["orders-*"]},
    }
)


def login_as(name: str, *groups: str) -> User:
    claims = {"preferred_username": name, "groups": list(groups)}
    return sync_user(
        identity_from_claims(
            claims, username_claim="preferred_username", groups_claim="groups", role_map=ROLE_MAP
        )
    )


def fresh(user: User) -> User:
    return User.objects.get(pk=user.pk)


def test_group_changes_apply_at_the_next_login() -> None:
    user = login_as("dana", "sre-viewers")
    assert role_of(fresh(user)) == VIEWER
    assert not user.has_usable_password()
    again = login_as("dana", "sre-admins")
    assert again.pk == user.pk
    assert role_of(fresh(user)) == ADMIN
    assert list(fresh(user).groups.values_list("name", flat=True)) == [ADMIN]


def test_scoped_mapping_grants_the_role_on_matching_topics_only() -> None:
    user = fresh(login_as("erin", "orders-oncall"))
    assert has_action(user, Action.CLAIM, cluster="default", topic="orders-eu")
    assert not has_action(user, Action.VIEW, cluster="default", topic="payments")
    group = Group.objects.get(name="oidc:orders-oncall")
    assert list(GroupTopicScope.objects.filter(group=group).values_list("pattern", flat=True)) == [
        "orders-*"
    ]
    assert role_of(user) is None  # no plain role group: the scoped group carries the rights
    assert has_action(user, Action.REPLAY, topic="orders-us")
    assert not has_action(user, Action.PURGE, topic="orders-us")  # Operator, not Admin


def test_a_disabled_account_is_refused() -> None:
    user = login_as("frank", "sre-admins")
    User.objects.filter(pk=user.pk).update(is_active=False)
    with pytest.raises(SSORefused, match="disabled"):
        login_as("frank", "sre-admins")


def test_the_audit_log_names_the_sso_identity() -> None:
    user = fresh(login_as("grace", "sre-admins"))
    event = audit_record(Actor(user, topic="t"), AuditEventType.DLQ_PURGE, reason="r")
    assert event.actor == "oidc:grace"


@pytest.fixture
def sso_on(settings: Any) -> Any:
    settings.CONSOLE_SSO_ENABLED = True
    settings.OIDC_RP_CLIENT_ID = "console"
    settings.OIDC_RP_CLIENT_SECRET = "secret"
    settings.OIDC_OP_AUTHORIZATION_ENDPOINT = "http://idp.invalid/authorize"
    settings.OIDC_OP_TOKEN_ENDPOINT = "http://idp.invalid/token"
    settings.OIDC_OP_USER_ENDPOINT = "http://idp.invalid/userinfo"
    settings.OIDC_OP_JWKS_ENDPOINT = "http://idp.invalid/jwks"
    settings.OIDC_ROLE_MAP = {"sre-admins": "Admin"}
    return settings


def test_login_page_offers_sso_and_hides_the_form_when_local_accounts_are_off(
    sso_on: Any,
) -> None:
    sso_on.CONSOLE_LOCAL_LOGIN = False
    User.objects.create_user("local", password="local-pass-123")
    client = Client()
    page = client.get("/login/").content.decode()
    assert "Log in with single sign-on" in page
    assert 'name="password"' not in page
    answer = client.post("/login/", {"username": "local", "password": "local-pass-123"})
    assert answer.status_code == 403
    assert "Local accounts are switched off" in answer.content.decode()
    assert "_auth_user_id" not in client.session


def test_sso_start_redirects_to_the_provider_with_pkce(sso_on: Any) -> None:
    answer = Client().get("/oidc/authenticate/?next=/alerts/")
    assert answer.status_code == 302
    assert answer["Location"].startswith("http://idp.invalid/authorize?")
    assert "code_challenge=" in answer["Location"]
    assert "nonce=" in answer["Location"]


def test_odd_callbacks_get_an_explanation_not_a_500(sso_on: Any) -> None:
    client = Client()
    refused = client.get("/oidc/callback/")
    assert refused.status_code == 403
    assert "could not be completed" in refused.content.decode()
    denied = client.get("/oidc/callback/?error=access_denied&error_description=<b>no</b>")
    assert denied.status_code == 502
    assert "access_denied" in denied.content.decode()
    assert "<b>no</b>" not in denied.content.decode()  # escaped


def test_sso_endpoints_are_404_when_not_configured(settings: Any) -> None:
    settings.CONSOLE_SSO_ENABLED = False
    assert Client().get("/oidc/authenticate/").status_code == 404
    assert Client().get("/oidc/callback/?code=a&state=b").status_code == 404
    assert "single sign-on" not in Client().get("/login/").content.decode()


def test_logout_of_a_local_session_goes_back_to_the_login_page() -> None:
    User.objects.create_user("lou", password="lou-pass-12345")
    client = Client()
    client.post("/login/", {"username": "lou", "password": "lou-pass-12345"})
    assert "_auth_user_id" in client.session
    answer = client.post("/logout/")
    assert answer.status_code == 302
    assert answer["Location"] == "/login/"
    assert "_auth_user_id" not in client.session
    assert client.get("/logout/").status_code == 405


def test_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.integration.test_settings import load_base

    loaded = load_base(
        monkeypatch,
        OIDC_RP_CLIENT_ID="console",
        CONSOLE_LOCAL_LOGIN="off",
        OIDC_ROLE_MAP='{"sre-admins": "Admin"}',
        OIDC_GROUPS_CLAIM="realm_access.roles",
    )
    assert loaded["CONSOLE_SSO_ENABLED"] is True
    assert loaded["OIDC_ROLE_MAP"] == {"sre-admins": "Admin"}
    assert loaded["OIDC_GROUPS_CLAIM"] == "realm_access.roles"
    assert loaded["AUTHENTICATION_BACKENDS"] == [
        "axes.backends.AxesStandaloneBackend",
        "dashboard.sso.backend.ConsoleOIDCBackend",
    ]
    local = load_base(monkeypatch, OIDC_RP_CLIENT_ID="", CONSOLE_LOCAL_LOGIN="")
    assert local["CONSOLE_SSO_ENABLED"] is False
    assert "django.contrib.auth.backends.ModelBackend" in local["AUTHENTICATION_BACKENDS"]


@pytest.mark.parametrize(
    ("name", "value"), [("OIDC_ROLE_MAP", "{not json"), ("CONSOLE_LOCAL_LOGIN", "maybe")]
)
def test_bad_sso_settings_say_what_is_wrong(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    from django.core.exceptions import ImproperlyConfigured

    from tests.integration.test_settings import load_base

    with pytest.raises(ImproperlyConfigured, match=name):
        load_base(monkeypatch, **{name: value})


def test_the_system_check_reports_sso_settings_that_cannot_work(sso_on: Any, settings: Any) -> None:
    from dashboard.sso.checks import sso_settings_check

    assert sso_settings_check() == []
    sso_on.OIDC_ROLE_MAP = {"sre-admins": "Root"}
    sso_on.OIDC_OP_JWKS_ENDPOINT = None
    assert {e.id for e in sso_settings_check()} == {"opsdash.E102", "opsdash.E103"}
    settings.CONSOLE_SSO_ENABLED = False
    settings.CONSOLE_LOCAL_LOGIN = False
    assert [e.id for e in sso_settings_check()] == ["opsdash.E101"]
