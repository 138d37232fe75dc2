"""Per-user API tokens: the management command and Bearer authentication."""

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from dashboard.models import ApiToken
from tests.integration.pages_support import make_user

pytestmark = [pytest.mark.redis, pytest.mark.django_db]

URL = "/api/v1/clusters/default/topics"


def _create(username: str, *extra: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    call_command("api_token", "create", username, *extra, stdout=out, stderr=err)
    assert "shown only once" in err.getvalue()
    return out.getvalue().strip()


def test_token_created_by_command_authenticates(client: Client, redis_url: str) -> None:
    make_user("scripter")
    token = _create("scripter", "--name", "cron")
    assert token.startswith("mqc_")
    row = ApiToken.objects.get()
    assert row.name == "cron"
    assert row.key_hash != token
    response = client.get(URL, headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200
    row.refresh_from_db()
    assert row.last_used_at is not None


def test_bad_or_revoked_token_is_401(client: Client, redis_url: str) -> None:
    make_user("scripter")
    token = _create("scripter")
    assert client.get(URL, headers={"Authorization": "Bearer mqc_wrong"}).status_code == 401
    out = io.StringIO()
    call_command("api_token", "revoke", token[:10], stdout=out)
    assert "revoked 1" in out.getvalue()
    assert client.get(URL, headers={"Authorization": f"Bearer {token}"}).status_code == 401


def test_revoke_by_username_and_errors(redis_url: str) -> None:
    make_user("a")
    _create("a")
    _create("a")
    out = io.StringIO()
    call_command("api_token", "revoke", "a", stdout=out)
    assert "revoked 2" in out.getvalue()
    with pytest.raises(CommandError, match="no active token"):
        call_command("api_token", "revoke", "a")
    with pytest.raises(CommandError, match="no user"):
        call_command("api_token", "create", "ghost")


def test_token_of_inactive_user_is_refused(client: Client, redis_url: str) -> None:
    user = make_user("gone")
    token = _create("gone")
    user.is_active = False
    user.save()
    assert client.get(URL, headers={"Authorization": f"Bearer {token}"}).status_code == 401


def test_token_expires(client: Client, redis_url: str) -> None:
    from datetime import timedelta

    from django.utils import timezone

    make_user("scripter")
    token = _create("scripter", "--days", "1")
    row = ApiToken.objects.get()
    assert row.expires_at is not None
    assert timedelta(hours=23) < row.expires_at - timezone.now() <= timedelta(days=1)
    assert client.get(URL, headers={"Authorization": f"Bearer {token}"}).status_code == 200
    ApiToken.objects.filter(pk=row.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert client.get(URL, headers={"Authorization": f"Bearer {token}"}).status_code == 401
    with pytest.raises(CommandError, match="days must be"):
        call_command("api_token", "create", "scripter", "--days", "0")


def test_tokens_are_read_only_unless_issued_for_writes(client: Client, redis_url: str) -> None:
    make_user("boss", role="Admin")
    read = _create("boss")
    write = _create("boss", "--write", "--name", "ops")
    url = "/api/v1/alerts/mute"
    denied = client.post(url, {}, headers={"Authorization": f"Bearer {read}"})
    assert denied.status_code == 403
    assert denied.json()["error"] == "this API token is read-only"
    allowed = client.post(url, {}, headers={"Authorization": f"Bearer {write}"})
    assert allowed.status_code != 403  # past the token scope (the empty body is a 400)
    assert client.get(URL, headers={"Authorization": f"Bearer {read}"}).status_code == 200


def test_issue_and_revoke_are_audited(redis_url: str) -> None:
    from dashboard.models import AuditEvent, AuditEventType

    make_user("scripter")
    token = _create("scripter", "--name", "cron", "--days", "7")
    call_command("api_token", "revoke", token[:10], stdout=io.StringIO())
    issued = AuditEvent.objects.filter(event_type=AuditEventType.API_TOKEN_ISSUE)
    assert [row.phase for row in issued.order_by("id")] == ["intent", "outcome"]
    intent = issued.get(phase="intent")
    assert intent.detail == {"user": "scripter", "name": "cron", "days": 7, "scope": "read"}
    assert issued.get(phase="outcome").detail["prefix"] == token[:12]
    revoked = AuditEvent.objects.filter(event_type=AuditEventType.API_TOKEN_REVOKE)
    assert revoked.get(phase="intent").detail["prefixes"] == [token[:12]]
    assert revoked.get(phase="outcome").counts == {"revoked": 1}
    assert token not in str(list(AuditEvent.objects.values()))  # never the token itself
