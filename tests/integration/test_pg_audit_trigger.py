"""On PostgreSQL the database itself refuses UPDATE and DELETE of audit rows.

Runs only when ``TEST_POSTGRES_URL`` names a server the suite may use (a user
allowed to CREATE DATABASE); it creates and drops its own database there.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

PG_URL = os.environ.get("TEST_POSTGRES_URL", "")
ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(not PG_URL, reason="set TEST_POSTGRES_URL to run")


@pytest.fixture
def scratch_db() -> str:
    import psycopg

    name = f"opsdash_audit_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    parts = urlsplit(PG_URL)
    url = urlunsplit(parts._replace(path=f"/{name}"))
    yield url
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_trigger_refuses_update_and_delete(scratch_db: str) -> None:
    import psycopg

    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "DATABASE_URL": scratch_db,
    }
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True
    )
    script = (
        "import django; django.setup();"
        "from dashboard.services.audit import audit_begin, audit_complete;"
        "from dashboard.models import AuditEventType;"
        "i = audit_begin(acting_user=None, event_type=AuditEventType.DLQ_PURGE, reason='pg');"
        "audit_complete(i, outcome='purged')"
    )
    subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, check=True)
    with psycopg.connect(scratch_db, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM dashboard_auditevent").fetchone() == (2,)
        for sql in (
            "UPDATE dashboard_auditevent SET reason = 'rewritten'",
            "DELETE FROM dashboard_auditevent",
        ):
            with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
                conn.execute(sql)
        assert conn.execute("SELECT count(*) FROM dashboard_auditevent").fetchone() == (2,)
    verify = subprocess.run(
        [sys.executable, "manage.py", "audit_verify"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert verify.returncode == 0
    assert "intact" in verify.stdout
