"""Settings come from the environment: MQ deployments, databases, secrets.

``base.py`` is executed afresh per test (``runpy``) with a patched environment,
so the live Django settings of the test session stay untouched; production
settings are imported in a subprocess, as gunicorn would.
"""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured

ROOT = Path(__file__).resolve().parents[2]
BASE = ROOT / "config" / "settings" / "base.py"
ENV_NAMES = ("MQ_CLUSTERS", "MQ_REDIS_URL", "DATABASE_URL", "ALLOWED_HOSTS", "OPSDASH_VAR_DIR")


def load_base(monkeypatch: pytest.MonkeyPatch, **env: str) -> dict[str, Any]:
    for name in ENV_NAMES:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return runpy.run_path(str(BASE), run_name="settings_under_test")


def test_mq_redis_url_is_the_default_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = load_base(monkeypatch, MQ_REDIS_URL="redis://mq.internal:6380/3")
    assert settings["MQ_CLUSTERS"] == {"default": {"url": "redis://mq.internal:6380/3"}}


def test_mq_clusters_json_object_names_each_deployment(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = (
        '{"prod-eu": {"url": "rediss://:pw@eu:6380/0", "control_prefix": "streaming:mq"},'
        ' "prod-us": {"url": "redis+cluster://us:7000/0"}}'
    )
    settings = load_base(monkeypatch, MQ_CLUSTERS=raw, MQ_REDIS_URL="redis://ignored:1/0")
    assert settings["MQ_CLUSTERS"] == {
        "prod-eu": {"url": "rediss://:pw@eu:6380/0", "control_prefix": "streaming:mq"},
        "prod-us": {"url": "redis+cluster://us:7000/0"},
    }


def test_mq_clusters_json_list_uses_the_name_field(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = '[{"name": "a", "url": "redis://a:6379/0"}, {"name": "b", "url": "redis://b:6379/1"}]'
    settings = load_base(monkeypatch, MQ_CLUSTERS=raw)
    assert settings["MQ_CLUSTERS"] == {
        "a": {"url": "redis://a:6379/0"},
        "b": {"url": "redis://b:6379/1"},
    }


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("{default: redis://x}", "MQ_CLUSTERS is not valid JSON"),
        ("{}", "non-empty JSON object or list"),
        ('"redis://x:6379/0"', "non-empty JSON object or list"),
        ('[{"url": "redis://x:6379/0"}]', 'needs a "name"'),
        ('{"eu": {"host": "x"}}', "MQ_CLUSTERS['eu'] needs a \"url\""),
        ('{"eu": "redis://x:6379/0"}', "MQ_CLUSTERS['eu'] needs a \"url\""),
        ('{"eu": {"url": "redis://x", "write_url": 1}}', '["write_url"] must be a URL'),
        ('{"eu": {"url": "redis://x", "read_only": "yes"}}', "must be true or false"),
        (
            '{"eu": {"url": "redis://x", "read_only": true, "write_url": "redis://w"}}',
            'a "read_only" cluster takes no "write_url"',
        ),
    ],
)
def test_bad_mq_clusters_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, raw: str, message: str
) -> None:
    with pytest.raises(ImproperlyConfigured) as caught:
        load_base(monkeypatch, MQ_CLUSTERS=raw)
    assert message in str(caught.value)
    assert "e.g. MQ_CLUSTERS=" in str(caught.value)  # the error shows what a good value looks like


def test_database_url_postgres_is_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = load_base(monkeypatch, DATABASE_URL="postgres://ops:s3cret@db.internal:5433/opsdash")
    db = settings["DATABASES"]["default"]
    assert db["ENGINE"] == "django.db.backends.postgresql"
    assert (db["NAME"], db["USER"], db["PASSWORD"]) == ("opsdash", "ops", "s3cret")
    assert (db["HOST"], db["PORT"]) == ("db.internal", 5433)


def test_default_database_is_sqlite_under_the_var_dir(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    settings = load_base(monkeypatch, OPSDASH_VAR_DIR=str(tmp_path))
    db = settings["DATABASES"]["default"]
    assert db["ENGINE"] == "django.db.backends.sqlite3"
    assert Path(db["NAME"]) == tmp_path / "db.sqlite3"


def test_allowed_hosts_is_a_comma_separated_list(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = load_base(monkeypatch, ALLOWED_HOSTS=" ops.example.com, .internal ,")
    assert settings["ALLOWED_HOSTS"] == ["ops.example.com", ".internal"]


def test_redis_cluster_url_gives_a_cluster_config(settings: Any) -> None:
    from dashboard.clusters import cluster_config, reset_caches

    settings.MQ_CLUSTERS = {
        "big": {"url": "redis+cluster://10.0.0.1:7000/0", "control_prefix": "mq"},
    }
    reset_caches()
    try:
        config = cluster_config("big")
    finally:
        reset_caches()
    assert config.cluster is True
    assert config.control_prefix == "mq"
    assert config.url == "redis://10.0.0.1:7000/0"


def run_prod(**env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in {*ENV_NAMES, "SECRET_KEY"}}
    clean.update({"METRICS_BEARER_TOKEN": "m" * 32}, **env)
    clean["DJANGO_SETTINGS_MODULE"] = "config.settings.prod"
    code = (
        "from django.conf import settings; db = settings.DATABASES['default'];"
        "print(db['ENGINE'], db['HOST'], settings.DEBUG, settings.SESSION_COOKIE_SECURE)"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_production_settings_need_a_secret_key() -> None:
    done = run_prod()
    assert done.returncode != 0
    assert "set SECRET_KEY for production" in done.stderr


def test_production_settings_with_postgres() -> None:
    done = run_prod(SECRET_KEY="x" * 50, DATABASE_URL="postgres://ops:pw@postgres:5432/opsdash")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["django.db.backends.postgresql", "postgres", "False", "True"]


def test_sentinel_urls_for_the_console_store_and_the_broker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("CONSOLE_REDIS_URL", "CELERY_BROKER_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CONSOLE_REDIS_URL", "redis+sentinel://:pw@s1,s2:26380/mq/1")
    settings = load_base(monkeypatch, MQ_REDIS_URL="redis+sentinel://s1/mq/0")
    # the broker defaults to the console store: kombu's sentinel transport, master named
    assert settings["CELERY_BROKER_URL"] == "sentinel://:pw@s1:26379/1;sentinel://:pw@s2:26380/1"
    assert settings["CELERY_BROKER_TRANSPORT_OPTIONS"]["master_name"] == "mq"
    assert settings["CELERY_BROKER_TRANSPORT_OPTIONS"]["visibility_timeout"] == 300
    ratelimit = settings["CACHES"]["ratelimit"]
    assert ratelimit["LOCATION"] == ["redis+sentinel://:pw@s1,s2:26380/mq/1"]  # not split
    assert ratelimit["OPTIONS"]["pool_class"] == "mqcore.sentinel.UrlConnectionPool"
    assert settings["CELERY_BEAT_SCHEDULER"] == "dashboard.beat:LeaderScheduler"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"CONSOLE_REDIS_URL": "redis+sentinel://:pw@s1/mq/x"}, "CONSOLE_REDIS_URL: bad Sentinel"),
        ({"CELERY_BROKER_URL": "redis+sentinel://s1"}, "CELERY_BROKER_URL: bad Sentinel"),
        ({"MQ_CLUSTERS": '{"eu": {"url": "redis+sentinel://:pw@s1/"}}'}, "['eu']['url']"),
    ],
)
def test_bad_sentinel_urls_stop_the_start(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], message: str
) -> None:
    for name in ("CONSOLE_REDIS_URL", "CELERY_BROKER_URL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ImproperlyConfigured, match="bad Sentinel URL") as caught:
        load_base(monkeypatch, **env)
    assert message in str(caught.value)
    assert "pw" not in str(caught.value)
