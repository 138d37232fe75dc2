"""Production settings pass Django's deploy checks; logins are throttled (django-axes)."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client

ROOT = Path(__file__).resolve().parents[2]


def _manage(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    # Production env: no secret unless given, and none of the test harness's switches
    # (the browser tests set DJANGO_ALLOW_ASYNC_UNSAFE for Playwright).
    dropped = (
        "SECRET_KEY",
        "OPSDASH_CHECK_ONLY",
        "DJANGO_ALLOW_ASYNC_UNSAFE",
        "DJANGO_SETTINGS_MODULE",
        "METRICS_BEARER_TOKEN",
        "METRICS_PUBLIC",
        "AUDIT_HMAC_KEY",
    )
    full = {k: v for k, v in os.environ.items() if k not in dropped}
    full.update(env)
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=full,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_check_deploy_is_clean_with_production_settings() -> None:
    result = _manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        DJANGO_SETTINGS_MODULE="config.settings.prod",
        SECRET_KEY=secrets.token_urlsafe(64),
        METRICS_BEARER_TOKEN=secrets.token_urlsafe(24),
        AUDIT_HMAC_KEY=secrets.token_urlsafe(32),
        AUDIT_SIGNED_FROM="1",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_check_deploy_warns_without_an_audit_key() -> None:
    result = _manage(
        "check",
        "--deploy",
        DJANGO_SETTINGS_MODULE="config.settings.prod",
        SECRET_KEY=secrets.token_urlsafe(64),
        METRICS_BEARER_TOKEN=secrets.token_urlsafe(24),
        AUDIT_HMAC_KEY="",
    )
    assert "AUDIT_HMAC_KEY" in result.stdout + result.stderr


def test_production_refuses_the_dev_secret_key() -> None:
    result = _manage("check", DJANGO_SETTINGS_MODULE="config.settings.prod")
    assert result.returncode != 0
    assert "SECRET_KEY" in result.stderr


def test_production_cookie_and_header_settings() -> None:
    code = (
        "import django; django.setup(); from django.conf import settings as s; "
        "print(s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SESSION_COOKIE_HTTPONLY, "
        "s.X_FRAME_OPTIONS, s.SECURE_HSTS_SECONDS > 0, s.DEBUG)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={
            **{k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"},
            "DJANGO_SETTINGS_MODULE": "config.settings.prod",
            "SECRET_KEY": secrets.token_urlsafe(64),
            "METRICS_BEARER_TOKEN": secrets.token_urlsafe(24),
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.stdout.split() == ["True", "True", "True", "DENY", "True", "False"], result.stderr


@pytest.mark.django_db
def test_login_is_locked_out_after_repeated_failures(settings) -> None:
    User.objects.create_user("target", password="right-password-123")
    client = Client(REMOTE_ADDR="10.0.0.7")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        resp = client.post("/login/", {"username": "target", "password": "wrong"})
        assert resp.status_code == 200  # the form again, with an error
    client.post("/login/", {"username": "target", "password": "wrong"})
    locked = client.post("/login/", {"username": "target", "password": "right-password-123"})
    assert locked.status_code in (403, 429)
    assert "_auth_user_id" not in client.session
    other_ip = Client(REMOTE_ADDR="10.0.0.8")
    ok = other_ip.post("/login/", {"username": "target", "password": "right-password-123"})
    assert ok.status_code == 302  # the lockout is per username + address
