"""The documented PostgreSQL roles: migrations as the owner, the app as a runtime role that
can append audit rows but neither rewrite, delete, truncate them nor drop the trigger.

Runs the SQL of docs/deploy.md ("Database roles") against a real PostgreSQL (the
``postgres_url`` harness), with role names made unique per run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from tests.harness.postgres import scratch_database

ROOT = Path(__file__).resolve().parents[2]
APPEND = (
    "import django; django.setup();"
    "from dashboard.services.audit import Actor, audit_begin, audit_complete;"
    "from dashboard.models import AuditEventType;"
    "i = audit_begin(Actor(None), AuditEventType.DLQ_PURGE, reason='pg');"
    "audit_complete(i, outcome='purged');"
    "from django.core.management import call_command; call_command('audit_verify')"
)


def _doc_sql_blocks() -> list[str]:
    text = (ROOT / "docs" / "deploy.md").read_text()
    section = text.split("**Database roles (PostgreSQL).**", 1)[1].split("**Bounds.**", 1)[0]
    return re.findall(r"```sql\n(.*?)```", section, flags=re.S)


def _as(url: str, user: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{user}:pw@{host}:{parts.port}" if parts.port else f"{user}:pw@{host}"
    return urlunsplit(parts._replace(netloc=netloc))


def _django(db_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test", "DATABASE_URL": db_url}
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


@pytest.fixture(scope="module")
def roles(postgres_url: str) -> Iterator[dict[str, str]]:
    suffix = uuid.uuid4().hex[:8]
    names = {"opsdash_owner": f"owner_{suffix}", "opsdash_app": f"app_{suffix}"}
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        for name in names.values():
            conn.execute(f"CREATE ROLE {name} LOGIN PASSWORD 'pw'")
    try:
        with scratch_database(postgres_url, "opsdash_roles") as url:
            dbname = urlsplit(url).path.lstrip("/")
            with psycopg.connect(postgres_url, autocommit=True) as conn:
                conn.execute(f'ALTER DATABASE "{dbname}" OWNER TO {names["opsdash_owner"]}')
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(f"ALTER SCHEMA public OWNER TO {names['opsdash_owner']}")
            owner_url = _as(url, names["opsdash_owner"])
            done = _django(owner_url, "manage.py", "migrate", "-v", "0")
            assert done.returncode == 0, done.stderr
            grants = _doc_sql_blocks()[1]
            for doc_name, name in names.items():
                grants = grants.replace(doc_name, name)
            with psycopg.connect(owner_url, autocommit=True) as conn:
                conn.execute(grants)
            yield {"owner": owner_url, "app": _as(url, names["opsdash_app"])}
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            for name in names.values():
                conn.execute(f"DROP ROLE IF EXISTS {name}")


def test_docs_have_the_role_setup_and_the_grants() -> None:
    blocks = _doc_sql_blocks()
    assert "CREATE ROLE opsdash_owner" in blocks[0]
    assert "REVOKE UPDATE, DELETE, TRUNCATE" in blocks[1]


def test_runtime_role_appends_but_cannot_rewrite_the_audit(roles: dict[str, str]) -> None:
    done = _django(roles["app"], "-c", APPEND)
    assert done.returncode == 0, done.stderr
    assert "intact" in done.stdout
    refused = (
        "UPDATE dashboard_auditevent SET reason = 'rewritten'",
        "DELETE FROM dashboard_auditevent",
        "TRUNCATE dashboard_auditevent",
        "DROP TRIGGER dashboard_auditevent_append_only ON dashboard_auditevent",
        "ALTER TABLE dashboard_auditevent DISABLE TRIGGER ALL",
    )
    with psycopg.connect(roles["app"], autocommit=True) as conn:
        for sql in refused:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(sql)
        count = conn.execute("SELECT count(*) FROM dashboard_auditevent").fetchone()
        assert count == (2,)
