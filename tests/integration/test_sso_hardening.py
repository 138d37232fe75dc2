"""Single sign-on, hardened: API tokens of SSO users need a recent login, provider groups
that would merge after the cut to a group name's length are refused, ``sub`` names the
user by default, and the callback never repeats the provider's error text."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.contrib.auth.models import Group, User
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import Client
from django.utils import timezone

from dashboard.models import ApiToken
from dashboard.sso.accounts import sync_user
from dashboard.sso.mapping import SSORefused, identity_from_claims, parse_role_map

pytestmark = [pytest.mark.redis, pytest.mark.django_db]

LONG = "x" * 150  # two provider groups that differ after the 145th character


def login_as(name: str, *groups: str, role_map: Any = None) -> User:
    return sync_user(
        identity_from_claims(
            {"sub": name, "groups": list(groups)},
            username_claim="sub",
            groups_claim="groups",
            role_map=role_map or parse_role_map({"sre-viewers": "Viewer"}),
        )
    )


def _api(token: str) -> Any:
    return Client().get("/api/v1/alerts", HTTP_AUTHORIZATION=f"Bearer {token}")


def _aged(user: User, days: float | None) -> None:
    last = None if days is None else timezone.now() - timedelta(days=days)
    User.objects.filter(pk=user.pk).update(last_login=last)


def test_sso_tokens_need_a_login_within_the_revalidation_window(settings: Any) -> None:
    user = login_as("dana", "sre-viewers")
    _, token = ApiToken.issue(user)
    _aged(user, 1)
    assert _api(token).status_code == 200
    for stale in (8, None):  # logged in 8 days ago; never logged in (created at a sync)
        _aged(user, stale)
        answer = _api(token)
        assert answer.status_code == 401
        assert "log in to the console again through single sign-on" in answer.json()["error"]
        assert answer["WWW-Authenticate"] == 'Bearer realm="api"'
    Client().force_login(User.objects.get(pk=user.pk))  # a login renews last_login
    assert _api(token).status_code == 200
    assert django_settings.SSO_TOKEN_REVALIDATE_DAYS == 7  # the default
    settings.SSO_TOKEN_REVALIDATE_DAYS = 30
    _aged(user, 8)
    assert _api(token).status_code == 200


def test_local_accounts_tokens_do_not_need_a_recent_login() -> None:
    from dashboard.permissions import roles_sync

    roles_sync()
    user = User.objects.create_user("lou", password="lou-pass-12345")
    user.groups.add(Group.objects.get(name="Viewer"))
    _, token = ApiToken.issue(user)
    _aged(user, 400)
    assert _api(token).status_code == 200


def test_provider_groups_that_collide_after_the_cut_are_refused(settings: Any) -> None:
    role_map = parse_role_map(
        {
            f"{LONG}-eu": {"role": "Operator", "topics": ["orders-eu"]},
            f"{LONG}-us": {"role": "Admin", "topics": ["*"]},
            f"{LONG}-plain": "Viewer",  # a plain mapping makes no group of its own
        }
    )
    with pytest.raises(SSORefused, match="cut to 150 characters"):
        login_as("erin", f"{LONG}-eu", role_map=role_map)
    assert not User.objects.filter(username="oidc:erin").exists()
    assert not Group.objects.filter(name__startswith="oidc:").exists()
    assert login_as("finn", f"{LONG}-plain", role_map=role_map).username == "oidc:finn"
    # and manage.py check names the clash
    settings.CONSOLE_SSO_ENABLED = True
    settings.OIDC_RP_CLIENT_SECRET = "secret"
    for name in ("AUTHORIZATION", "TOKEN", "USER", "JWKS"):
        setattr(settings, f"OIDC_OP_{name}_ENDPOINT", "http://idp.invalid/x")
    settings.OIDC_ROLE_MAP = {
        f"{LONG}-eu": {"role": "Viewer", "topics": ["a"]},
        f"{LONG}-us": {"role": "Viewer", "topics": ["b"]},
    }
    with pytest.raises(SystemCheckError, match=r"opsdash\.W104"):
        call_command("check", fail_level="WARNING")


def test_sub_names_the_user_by_default() -> None:
    assert django_settings.OIDC_USERNAME_CLAIM == "sub"
    identity = identity_from_claims(
        {"sub": "00u1a2b3", "preferred_username": "jane@example.com", "groups": ["sre"]},
        username_claim=django_settings.OIDC_USERNAME_CLAIM,
        groups_claim="groups",
        role_map=parse_role_map({"sre": "Viewer"}),
    )
    assert identity.username == "oidc:00u1a2b3"


def test_the_callback_shows_a_fixed_message(settings: Any, caplog: Any) -> None:
    settings.CONSOLE_SSO_ENABLED = True
    crafted = "Your account is locked. Call +1 555 0100 and give your password"
    client = Client()
    with caplog.at_level(logging.WARNING, logger="dashboard.views.sso"):
        answer = client.get(
            "/oidc/callback/", {"error": "access_denied", "error_description": crafted}
        )
    page = answer.content.decode()
    assert answer.status_code == 502
    assert "access_denied" in page  # a known error code
    assert "Call +1 555" not in page
    assert "Call +1 555" in caplog.text  # the provider's text is logged
    odd = client.get("/oidc/callback/", {"error": crafted + "\n<b>x</b>"})
    assert odd.status_code == 502
    assert "Call +1 555" not in odd.content.decode()  # an unknown code is not repeated
    assert "\\n<b>x</b>" in caplog.text  # logged escaped (repr), on one line
