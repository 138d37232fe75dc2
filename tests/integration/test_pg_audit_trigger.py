"""On PostgreSQL the database itself refuses UPDATE and DELETE of audit rows.

Uses ``postgres_url`` (``TEST_POSTGRES_URL``, else a private throwaway server;
skipped only when neither exists). The module migrates a fresh database of its
own there with the real ``manage.py migrate`` and drops it afterwards; the app
runs in subprocesses pointed at it by ``DATABASE_URL``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.harness.postgres import scratch_database

ROOT = Path(__file__).resolve().parents[2]

APPEND = (
    "import django; django.setup();"
    "from dashboard.services.audit import Actor, audit_begin, audit_complete;"
    "from dashboard.models import AuditEventType;"
    "i = audit_begin(Actor(None), AuditEventType.DLQ_PURGE, reason='pg');"
    "audit_complete(i, outcome='purged')"
)


def _env(db_url: str) -> dict[str, str]:
    return {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test", "DATABASE_URL": db_url}


def _django(db_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env=_env(db_url),
        capture_output=True,
        text=True,
        check=False,
        timeout=90,
    )


@pytest.fixture(scope="module")
def migrated_db(postgres_url: str) -> Iterator[str]:
    with scratch_database(postgres_url, "opsdash_audit") as url:
        done = _django(url, "manage.py", "migrate", "-v", "0")
        assert done.returncode == 0, done.stderr
        yield url


def _count(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("SELECT count(*) FROM dashboard_auditevent").fetchone()
    assert row is not None
    return int(row[0])


def test_trigger_refuses_update_and_delete(migrated_db: str) -> None:
    with psycopg.connect(migrated_db, autocommit=True) as conn:
        trigger = conn.execute(
            "SELECT tgname FROM pg_trigger WHERE tgrelid = 'dashboard_auditevent'::regclass"
            " AND NOT tgisinternal"
        ).fetchall()
        assert ("dashboard_auditevent_append_only",) in trigger
        before = _count(conn)
    done = _django(migrated_db, "-c", APPEND)
    assert done.returncode == 0, done.stderr
    with psycopg.connect(migrated_db, autocommit=True) as conn:
        assert _count(conn) == before + 2  # intent + outcome
        for sql in (
            "UPDATE dashboard_auditevent SET reason = 'rewritten'",
            "DELETE FROM dashboard_auditevent",
        ):
            with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
                conn.execute(sql)
        assert _count(conn) == before + 2
        assert conn.execute(
            "SELECT count(*) FROM dashboard_auditevent WHERE reason = 'rewritten'"
        ).fetchone() == (0,)
    verify = _django(migrated_db, "manage.py", "audit_verify")
    assert verify.returncode == 0, verify.stderr
    assert "intact" in verify.stdout


def test_app_path_still_appends_after_refusals(migrated_db: str) -> None:
    """The trigger blocks rewriting history, not writing it: the service keeps appending."""
    with psycopg.connect(migrated_db, autocommit=True) as conn:
        before = _count(conn)
        with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
            conn.execute(
                "DELETE FROM dashboard_auditevent"
                " WHERE id = (SELECT max(id) FROM dashboard_auditevent)"
            )
    # One process: append through the service, then the verify command (saves a Django start).
    done = _django(
        migrated_db,
        "-c",
        APPEND + ";from django.core.management import call_command; call_command('audit_verify')",
    )
    assert done.returncode == 0, done.stderr
    assert "intact" in done.stdout
    with psycopg.connect(migrated_db, autocommit=True) as conn:
        assert _count(conn) == before + 2
