"""The idempotent SQL sink's database on real PostgreSQL and SQLite, without Spark.

Per micro-batch, ``SqlSink``'s executors call ``SqlDatabase.stage_rows`` (the
staging table, keyed by batch id) and the driver ``commit_staged``: the staged rows
are upserted by (pipeline, partition, message id) and the batch marker row is
written in the same transaction, and the staging rows go. Replays are refused by
the marker, redelivered messages replace instead of adding, a task staging its
rows twice changes nothing, and a failing batch leaves neither rows nor marker.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from mqcore.sinkstate import SqlDatabase
from tests.harness.postgres import scratch_database

PIPE = "order_totals"
Rows = list[tuple[str, int, str | None, int]]  # (message id, partition, key, amount)


@pytest.fixture(params=["postgres", "sqlite"])
def sink_db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlDatabase]:
    if request.param == "sqlite":
        database = SqlDatabase(f"sqlite:///{tmp_path / 'sink.sqlite3'}")
        try:
            yield database
        finally:
            database.close()
        return
    with scratch_database(request.getfixturevalue("postgres_url"), "opsdash_sink") as url:
        database = SqlDatabase(url)
        try:
            yield database
        finally:
            database.close()


def _marker(db: SqlDatabase) -> tuple[int, dict[str, str]] | None:
    cur = db.conn.cursor()
    cur.execute(
        db._q("SELECT batch_id, end_offsets FROM mqcore_sink_batches WHERE pipeline = ?"), (PIPE,)
    )
    row = cur.fetchone()
    db.conn.rollback()
    return (int(row[0]), json.loads(row[1])) if row else None


def _write(db: SqlDatabase, batch: int, rows: Rows, offsets: dict[str, str]) -> bool:
    """What one micro-batch does: two executor tasks stage halves, the driver commits."""
    half = len(rows) // 2
    db.stage_rows(PIPE, batch, rows[:half])
    db.stage_rows(PIPE, batch, rows[half:])
    db.stage_rows(PIPE, batch, rows[half:])  # a retried task stages its rows again
    return db.commit_staged(PIPE, batch, offsets)


def test_upsert_and_marker_commit_together(sink_db: SqlDatabase) -> None:
    assert sink_db.committed_batch(PIPE) is None
    first: Rows = [("1-0", 0, "a", 5), ("2-0", 0, "b", 7), ("1-0", 1, "a", 1), ("3-0", 1, None, 9)]
    assert _write(sink_db, 0, first, {"0": "2-0", "1": "3-0"}) is True
    assert sink_db.totals(PIPE) == {"a": 6, "b": 7}
    assert _marker(sink_db) == (0, {"0": "2-0", "1": "3-0"})

    # A replayed batch id is refused by the marker: nothing changes.
    assert _write(sink_db, 0, [("9-0", 0, "a", 100)], {"0": "9-0"}) is False
    assert sink_db.totals(PIPE) == {"a": 6, "b": 7}
    assert _marker(sink_db) == (0, {"0": "2-0", "1": "3-0"})

    # A redelivered message replaces its row (upsert), a new one adds.
    second: Rows = [("2-0", 0, "b", 7), ("4-0", 0, "a", 4)]
    assert _write(sink_db, 1, second, {"0": "4-0", "1": "3-0"}) is True
    assert sink_db.totals(PIPE) == {"a": 10, "b": 7}
    assert sorted(sink_db.message_ids(PIPE)) == ["0:1-0", "0:2-0", "0:4-0", "1:1-0", "1:3-0"]
    assert sink_db.committed_batch(PIPE) == 1

    # A batch failing mid-transaction (a key over VARCHAR(500)) leaves no row and no marker.
    bad: Rows = [("5-0", 0, "a", 50), ("6-0", 0, "k" * 501, 1)]
    if sink_db.sqlite:  # SQLite does not enforce VARCHAR lengths: a NOT NULL breaks instead
        bad = [("5-0", 0, "a", 50), ("6-0", 0, "k", None)]  # type: ignore[list-item]
    with pytest.raises((psycopg.errors.StringDataRightTruncation, sqlite3.IntegrityError)):
        _write(sink_db, 2, bad, {"0": "6-0", "1": "3-0"})
    assert sink_db.totals(PIPE) == {"a": 10, "b": 7}
    assert _marker(sink_db) == (1, {"0": "4-0", "1": "3-0"})

    # The same connection carries on: the retried batch commits once.
    assert _write(sink_db, 2, [("5-0", 0, "a", 50)], {"0": "5-0", "1": "3-0"}) is True
    assert sink_db.totals(PIPE) == {"a": 60, "b": 7}
    assert _marker(sink_db) == (2, {"0": "5-0", "1": "3-0"})
    assert sink_db.staged_count(PIPE) == 0


def test_staged_rows_wait_for_the_commit_and_a_committed_batch_drops_them(
    sink_db: SqlDatabase,
) -> None:
    sink_db.stage_rows(PIPE, 0, [("1-0", 0, "a", 5)])
    assert sink_db.totals(PIPE) == {}  # staged is not published
    assert sink_db.staged_count(PIPE) == 1
    assert sink_db.commit_staged(PIPE, 0, {"0": "1-0"}) is True
    assert sink_db.totals(PIPE) == {"a": 5}
    # A replay of batch 0 after the commit (the driver died before Redis followed):
    # the executors stage it again, the marker refuses it and the staging rows go.
    sink_db.stage_rows(PIPE, 0, [("1-0", 0, "a", 5)])
    assert sink_db.commit_staged(PIPE, 0, {"0": "1-0"}) is False
    assert sink_db.totals(PIPE) == {"a": 5}
    assert sink_db.staged_count(PIPE) == 0
    # A crash inside the commit transaction publishes nothing; the staged rows stay.
    sink_db.stage_rows(PIPE, 1, [("2-0", 0, "b", 1)])

    def crash() -> None:
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError):
        sink_db.commit_staged(PIPE, 1, {"0": "2-0"}, before_commit=crash)
    assert sink_db.totals(PIPE) == {"a": 5}
    assert sink_db.staged_count(PIPE) == 1
    assert sink_db.commit_staged(PIPE, 1, {"0": "2-0"}) is True
    assert sink_db.totals(PIPE) == {"a": 5, "b": 1}


def test_tasks_opening_a_fresh_postgres_database_at_once_create_its_tables_once(
    postgres_url: str,
) -> None:
    """Spark's tasks of a first batch open the sink's database together: each creates the
    tables if they do not exist, which PostgreSQL does not make safe against itself."""
    import threading

    with scratch_database(postgres_url, "opsdash_sink") as url:
        start = threading.Barrier(8)
        failures: list[BaseException] = []

        def task() -> None:
            start.wait()
            try:
                SqlDatabase(url).close()
            except BaseException as exc:  # collected for the assertion
                failures.append(exc)

        threads = [threading.Thread(target=task) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert failures == []
