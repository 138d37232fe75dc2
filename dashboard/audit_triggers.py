"""Suspend the SQLite triggers that keep the audit table append-only, for ``flush`` only.

On SQLite Django's ``flush`` (used between transactional tests and by
``manage.py flush``) empties tables with DELETE, which the triggers of migration
0005 refuse; on PostgreSQL it uses TRUNCATE, which passes the row trigger. The
triggers are read back from ``sqlite_master``, dropped, and re-created as they were.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connections

__all__ = ["suspended_audit_triggers"]

AUDIT_TABLE = "dashboard_auditevent"


@contextmanager
def suspended_audit_triggers(using: str = "default") -> Iterator[None]:
    connection = connections[using]
    if connection.vendor != "sqlite":
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = %s",
            [AUDIT_TABLE],
        )
        triggers = cursor.fetchall()
        for name, _ in triggers:
            cursor.execute(f'DROP TRIGGER IF EXISTS "{name}"')
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            for _, sql in triggers:
                cursor.execute(sql)
