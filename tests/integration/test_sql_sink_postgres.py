"""The idempotent SQL sink on real PostgreSQL, without Spark.

``SqlDatabase.write_batch`` is what ``SqlSink`` calls per micro-batch: the rows are
upserted by (pipeline, partition, message id) and the batch marker row is written in
the same transaction. Replays are refused by the marker, redelivered messages
replace instead of adding, and a failing batch leaves neither rows nor marker.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import psycopg
import pytest

from mqcore.sinkstate import SqlDatabase
from tests.harness.postgres import scratch_database

PIPE = "order_totals"
Rows = list[tuple[str, int, str | None, int]]  # (message id, partition, key, amount)


@pytest.fixture
def sink_db(postgres_url: str) -> Iterator[SqlDatabase]:
    with scratch_database(postgres_url, "opsdash_sink") as url:
        database = SqlDatabase(url)
        try:
            yield database
        finally:
            database.close()


def _marker(url: str) -> tuple[int, dict[str, str]] | None:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT batch_id, end_offsets FROM mqcore_sink_batches WHERE pipeline = %s", (PIPE,)
        ).fetchone()
    return (int(row[0]), json.loads(row[1])) if row else None


def test_upsert_and_marker_commit_together(sink_db: SqlDatabase) -> None:
    assert sink_db.committed_batch(PIPE) is None
    first: Rows = [("1-0", 0, "a", 5), ("2-0", 0, "b", 7), ("1-0", 1, "a", 1), ("3-0", 1, None, 9)]
    assert sink_db.write_batch(PIPE, 0, first, {"0": "2-0", "1": "3-0"}) is True
    assert sink_db.totals(PIPE) == {"a": 6, "b": 7}
    assert _marker(sink_db.url) == (0, {"0": "2-0", "1": "3-0"})

    # A replayed batch id is refused by the marker: nothing changes.
    assert sink_db.write_batch(PIPE, 0, [("9-0", 0, "a", 100)], {"0": "9-0"}) is False
    assert sink_db.totals(PIPE) == {"a": 6, "b": 7}
    assert _marker(sink_db.url) == (0, {"0": "2-0", "1": "3-0"})

    # A redelivered message replaces its row (upsert), a new one adds.
    second: Rows = [("2-0", 0, "b", 7), ("4-0", 0, "a", 4)]
    assert sink_db.write_batch(PIPE, 1, second, {"0": "4-0", "1": "3-0"}) is True
    assert sink_db.totals(PIPE) == {"a": 10, "b": 7}
    assert sorted(sink_db.message_ids(PIPE)) == ["0:1-0", "0:2-0", "0:4-0", "1:1-0", "1:3-0"]
    assert sink_db.committed_batch(PIPE) == 1

    # A batch failing mid-transaction (a key over VARCHAR(500)) leaves no row and no marker.
    bad: Rows = [("5-0", 0, "a", 50), ("6-0", 0, "k" * 501, 1)]
    with pytest.raises(psycopg.errors.StringDataRightTruncation):
        sink_db.write_batch(PIPE, 2, bad, {"0": "6-0", "1": "3-0"})
    assert sink_db.totals(PIPE) == {"a": 10, "b": 7}
    assert _marker(sink_db.url) == (1, {"0": "4-0", "1": "3-0"})

    # The same connection carries on: the retried batch commits once.
    assert sink_db.write_batch(PIPE, 2, [("5-0", 0, "a", 50)], {"0": "5-0", "1": "3-0"}) is True
    assert sink_db.totals(PIPE) == {"a": 60, "b": 7}
    assert _marker(sink_db.url) == (2, {"0": "5-0", "1": "3-0"})
