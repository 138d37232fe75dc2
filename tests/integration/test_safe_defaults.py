"""Entry points default to production settings; secrets and URLs stay out of pages and logs.

Each entry point runs in a subprocess without ``DJANGO_SETTINGS_MODULE``, as
``docker run`` or a bare Kubernetes manifest would start it.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client, RequestFactory
from django.views.debug import ExceptionReporter, get_default_exception_reporter_filter

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "hunter2-" + "x" * 8
DROPPED = (
    "DJANGO_SETTINGS_MODULE",
    "SECRET_KEY",
    "OPSDASH_CHECK_ONLY",
    "DJANGO_ALLOW_ASYNC_UNSAFE",
    "METRICS_BEARER_TOKEN",
    "METRICS_PUBLIC",
)


def _run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k not in DROPPED}
    full.update(env)
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env=full,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _secrets() -> dict[str, str]:
    return {
        "SECRET_KEY": secrets.token_urlsafe(64),
        "METRICS_BEARER_TOKEN": secrets.token_urlsafe(24),
    }


def test_manage_py_without_settings_refuses_to_start_without_a_secret_key() -> None:
    result = _run("manage.py", "check")
    assert result.returncode != 0
    assert "SECRET_KEY" in result.stderr


@pytest.mark.parametrize(
    "code",
    [
        "import config.wsgi",
        "import config.celery, django; django.setup()",
    ],
    ids=["wsgi", "celery"],
)
def test_entry_points_without_settings_run_production(code: str) -> None:
    probe = (
        f"{code}; from django.conf import settings as s; print(s.DEBUG, s.SESSION_COOKIE_SECURE)"
    )
    assert _run("-c", probe).returncode != 0  # no SECRET_KEY: refuses
    result = _run("-c", probe, **_secrets())
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "True"]


def test_production_refuses_to_serve_metrics_without_a_token() -> None:
    env = {"SECRET_KEY": secrets.token_urlsafe(64)}
    refused = _run("manage.py", "check", **env)
    assert refused.returncode != 0
    assert "METRICS_BEARER_TOKEN" in refused.stderr
    public = _run("manage.py", "check", METRICS_PUBLIC="1", **env)
    assert public.returncode == 0, public.stderr


def test_connection_urls_are_hidden_on_error_pages(settings) -> None:
    url = f"redis://:{PASSWORD}@mq.internal:6379/0"
    settings.MQ_CLUSTERS = {"eu": {"url": url}}
    settings.CELERY_BROKER_URL = url
    settings.CONSOLE_REDIS_URL = url
    safe = get_default_exception_reporter_filter().get_safe_settings()
    for name in ("MQ_CLUSTERS", "CELERY_BROKER_URL", "CONSOLE_REDIS_URL"):
        assert PASSWORD not in str(safe[name]), name
    request = RequestFactory().get("/x")
    try:
        broker = url  # a local variable in the traceback
        raise ConnectionError(f"cannot reach {broker.split('@')[1]}")
    except ConnectionError:
        html = ExceptionReporter(request, *sys.exc_info()).get_traceback_html()
    assert PASSWORD not in html


def test_log_lines_have_url_passwords_redacted() -> None:
    code = (
        "import django, logging; django.setup(); log = logging.getLogger('mqcore.probe');"
        f"log.warning('cannot reach %s', 'rediss://app:{PASSWORD}@mq:6380/0');"
        "\ntry:\n"
        f"    raise OSError('Error connecting to redis://:{PASSWORD}@mq:6379')\n"
        "except OSError:\n"
        "    log.exception('collector failed')\n"
    )
    result = _run("-c", code, DJANGO_SETTINGS_MODULE="config.settings.dev")
    assert result.returncode == 0, result.stderr
    assert PASSWORD not in result.stderr
    assert "rediss://app:***@mq:6380/0" in result.stderr
    assert "redis://:***@mq:6379" in result.stderr


def test_metrics_token_compare_survives_a_non_ascii_header(settings, console_r) -> None:
    settings.METRICS_BEARER_TOKEN = "s3cret-token"
    response = Client().get("/metrics", HTTP_AUTHORIZATION="Bearer s3crét-tökén")
    assert response.status_code == 401


def test_error_answers_redact_url_passwords() -> None:
    from dashboard.errors import http_error
    from mqcore.config import redact_urls
    from mqcore.errors import InvalidArgumentError

    assert redact_urls("a redis://:pw@h:1/0 and rediss://u:p%40ss@h2/1 b") == (
        "a redis://:***@h:1/0 and rediss://u:***@h2/1 b"
    )
    assert redact_urls("redis://host:6379/0") == "redis://host:6379/0"
    err = http_error(InvalidArgumentError(f"bad url redis://:{PASSWORD}@mq:6379/0"))
    assert err is not None
    assert PASSWORD not in err.message
