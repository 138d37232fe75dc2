"""LDAP login through the login form, against a private slapd (tests/harness/slapd.py):
groups mapped to roles and topic scopes as with OIDC, deny by default, wrong passwords
counted by django-axes, a directory that is down explained, group changes applied at
the next login, local accounts switched off, StartTLS and LDAPS."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.utils import timezone

from dashboard.models import ApiToken, GroupTopicScope
from dashboard.permissions import ADMIN, VIEWER, Action, has_action, role_of
from dashboard.services.access import role_set
from dashboard.services.audit import Actor
from scripts.embedded import find_free_port
from tests.harness.slapd import PrivateSlapd, running_slapd

pytestmark = pytest.mark.django_db

LDAP_BACKEND = "dashboard.sso.directory.ConsoleLDAPBackend"
ROLE_MAP = {
    "sre-admins": "Admin",
    "sre-viewers": "Viewer",
    "orders-oncall": {"role": "Operator", "topics": ["orders-*"]},
}


@pytest.fixture(scope="module")
def slapd() -> Iterator[PrivateSlapd]:
    users = ("alice", "bob", "carol", "dave", "erin", "mallory")
    groups = {
        "sre-admins": ["alice"],
        "sre-viewers": ["dave"],
        "orders-oncall": ["carol"],
        "marketing": ["bob"],
    }
    with running_slapd(users, groups) as server:
        yield server


@pytest.fixture
def ldap_on(settings: Any, slapd: PrivateSlapd) -> Any:
    for name, value in slapd.console_settings(ROLE_MAP).items():
        setattr(settings, name, value)
    return settings


def login(uid: str, password: str | None = None) -> tuple[Client, Any]:
    client = Client()
    answer = client.post("/login/", {"username": uid, "password": password or f"{uid}-password"})
    return client, answer


def user(uid: str) -> User:
    return User.objects.get(username=f"ldap:{uid}")


def test_a_user_in_a_mapped_group_logs_in_with_its_role(ldap_on: Any) -> None:
    client, answer = login("alice")
    assert answer.status_code == 302
    assert client.session["_auth_user_id"] == str(user("alice").pk)
    alice = user("alice")
    assert role_of(alice) == ADMIN
    assert (alice.email, alice.first_name, alice.last_name) == (
        "alice@example.test",
        "Alice",
        "Tester",
    )
    assert not alice.has_usable_password()
    assert client.get("/clusters/default/").status_code == 200
    _, viewer = login("dave")
    assert viewer.status_code == 302
    assert role_of(user("dave")) == VIEWER


def test_a_scoped_mapping_grants_the_role_on_matching_topics_only(ldap_on: Any) -> None:
    _, answer = login("carol")
    assert answer.status_code == 302
    carol = user("carol")
    assert role_of(carol) is None
    assert has_action(carol, Action.CLAIM, cluster="default", topic="orders-eu")
    assert not has_action(carol, Action.VIEW, cluster="default", topic="payments")
    group = Group.objects.get(name="ldap:orders-oncall")
    assert list(GroupTopicScope.objects.filter(group=group).values_list("pattern", flat=True)) == [
        "orders-*"
    ]


def test_a_user_in_no_mapped_group_is_refused(ldap_on: Any) -> None:
    client, answer = login("bob")
    assert answer.status_code == 403
    page = answer.content.decode()
    assert "You signed in as ldap:bob" in page
    assert "marketing" in page
    assert "_auth_user_id" not in client.session
    _, nobody = login("erin")  # in no group at all
    assert nobody.status_code == 403
    assert "(none)" in nobody.content.decode()


def test_a_wrong_password_is_refused_and_counted_by_axes(ldap_on: Any) -> None:
    client, answer = login("alice", "not-her-password")
    assert answer.status_code == 200
    assert "Wrong username or password." in answer.content.decode()
    assert "_auth_user_id" not in client.session
    _, unknown = login("zoe", "whatever")
    assert "Wrong username or password." in unknown.content.decode()
    for _ in range(ldap_on.AXES_FAILURE_LIMIT):
        login("mallory", "guess")
    client, locked = login("mallory")  # the right password, but locked out
    assert locked.status_code in (403, 429)
    assert "_auth_user_id" not in client.session


def test_group_changes_in_the_directory_apply_at_the_next_login(
    ldap_on: Any, slapd: PrivateSlapd
) -> None:
    slapd.set_members("sre-viewers", "dave")
    login("dave")
    assert role_of(user("dave")) == VIEWER
    try:
        slapd.set_members("sre-admins", "alice", "dave")
        slapd.set_members("sre-viewers")
        _, answer = login("dave")
        assert answer.status_code == 302
        assert role_of(user("dave")) == ADMIN
        assert list(user("dave").groups.values_list("name", flat=True)) == [ADMIN]
        slapd.set_members("sre-admins", "alice")
        _, refused = login("dave")  # in no mapped group any more
        assert refused.status_code == 403
    finally:
        slapd.set_members("sre-admins", "alice")
        slapd.set_members("sre-viewers", "dave")


def test_a_directory_that_is_down_gets_a_clear_error(ldap_on: Any) -> None:
    ldap_on.LDAP_SERVER_URI = f"ldap://127.0.0.1:{find_free_port()}"
    client, answer = login("alice")
    assert answer.status_code == 502
    page = answer.content.decode()
    assert "The LDAP directory could not check your password (SERVER_DOWN)" in page
    assert "_auth_user_id" not in client.session


def test_local_accounts_switched_off_leave_ldap_logins(ldap_on: Any) -> None:
    ldap_on.CONSOLE_LOCAL_LOGIN = False
    ldap_on.AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", LDAP_BACKEND]
    User.objects.create_user("local", password="local-pass-123")
    client = Client()
    page = client.get("/login/").content.decode()
    assert 'name="password"' in page
    local = client.post("/login/", {"username": "local", "password": "local-pass-123"})
    assert "Wrong username or password." in local.content.decode()
    assert "_auth_user_id" not in client.session
    _, answer = login("alice")
    assert answer.status_code == 302


def test_a_login_name_cannot_reach_another_account(ldap_on: Any) -> None:
    User.objects.create_user("alice", password="local-alice-pass")  # a local namesake
    _, answer = login("alice")
    assert answer.status_code == 302
    assert user("alice").pk != User.objects.get(username="alice").pk
    for odd in ("ldap:alice", "*", "alice)(uid=*", "x" * 200):
        _, refused = login(odd, "alice-password")
        assert refused.status_code == 200, odd
        assert "Wrong username or password." in refused.content.decode()


def test_start_tls_and_ldaps_check_the_server_certificate(
    ldap_on: Any, slapd: PrivateSlapd
) -> None:
    ldap_on.LDAP_START_TLS = True
    ldap_on.LDAP_CA_FILE = slapd.ca_file
    assert login("alice")[1].status_code == 302
    ldap_on.LDAP_START_TLS = False
    ldap_on.LDAP_SERVER_URI = slapd.tls_uri
    assert login("alice")[1].status_code == 302
    ldap_on.LDAP_CA_FILE = ""  # the system's CAs do not know the test CA
    refused = login("alice")[1]
    assert refused.status_code == 502
    assert "The LDAP directory could not check your password" in refused.content.decode()


def test_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.integration.test_settings import load_base

    loaded = load_base(
        monkeypatch,
        LDAP_SERVER_URI="ldaps://ldap.example.com",
        LDAP_USER_SEARCH_BASE="ou=people,dc=example,dc=com",
        LDAP_ROLE_MAP='{"sre-admins": "Admin"}',
        LDAP_START_TLS="off",
        CONSOLE_LOCAL_LOGIN="off",
    )
    assert loaded["CONSOLE_LDAP_ENABLED"] is True
    assert loaded["LDAP_ROLE_MAP"] == {"sre-admins": "Admin"}
    assert loaded["AUTHENTICATION_BACKENDS"] == [
        "axes.backends.AxesStandaloneBackend",
        LDAP_BACKEND,
    ]
    off = load_base(monkeypatch, LDAP_SERVER_URI="", CONSOLE_LOCAL_LOGIN="")
    assert off["CONSOLE_LDAP_ENABLED"] is False
    assert LDAP_BACKEND not in off["AUTHENTICATION_BACKENDS"]


def test_the_system_check_reports_ldap_settings_that_cannot_work(ldap_on: Any) -> None:
    from dashboard.sso.checks import ldap_settings_check, sso_settings_check

    assert ldap_settings_check() == []
    ldap_on.CONSOLE_LOCAL_LOGIN = False
    assert sso_settings_check() == []  # LDAP users can still log in
    ldap_on.LDAP_USER_SEARCH_BASE = ""
    ldap_on.LDAP_ROLE_MAP = {"sre-admins": "Root"}
    assert {e.id for e in ldap_settings_check()} == {"opsdash.E105", "opsdash.E106"}
    ldap_on.LDAP_ROLE_MAP = {}
    assert "LDAP_ROLE_MAP is empty" in str(ldap_settings_check()[-1])


@pytest.mark.redis
def test_ldap_users_api_tokens_need_a_recent_login(ldap_on: Any) -> None:
    login("dave")
    dave = user("dave")
    _, token = ApiToken.issue(dave)

    def api() -> Any:
        return Client().get("/api/v1/alerts", HTTP_AUTHORIZATION=f"Bearer {token}")

    assert api().status_code == 200
    stale = timezone.now() - timedelta(days=ldap_on.SSO_TOKEN_REVALIDATE_DAYS + 1)
    User.objects.filter(pk=dave.pk).update(last_login=stale)
    answer = api()
    assert answer.status_code == 401
    assert "log in to the console again through LDAP" in answer.json()["error"]
    login("dave")  # the next login renews it, with the directory's groups of now
    assert api().status_code == 200


def test_the_console_does_not_edit_ldap_users_roles(ldap_on: Any) -> None:
    login("alice")
    with pytest.raises(ValueError, match="get their roles from the identity provider"):
        role_set(Actor(user("alice")), username="ldap:alice", role="Viewer")
    assert role_of(user("alice")) == ADMIN


def test_a_deactivated_console_account_is_refused(ldap_on: Any) -> None:
    login("alice")
    User.objects.filter(username="ldap:alice").update(is_active=False)
    client, answer = login("alice")
    assert answer.status_code == 403
    assert "The console account ldap:alice is disabled." in answer.content.decode()
    assert "_auth_user_id" not in client.session
