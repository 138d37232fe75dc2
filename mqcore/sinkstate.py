"""What the exactly-once sinks stored, readable without Spark.

The SQL sink's database (:class:`SqlDatabase`, SQLite or PostgreSQL): rows
keyed by (pipeline, partition, message id), one marker row per pipeline, and
the staging table the executors write each batch into, keyed by batch id, before
the driver commits it (rows and marker in one transaction). Also the Redis
sinks' per-key totals. This module never imports ``pyspark``, so
the web console can show sink output without the ``spark`` extra.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mqcore.clock import now_ms
from mqcore.config import RedisClient
from mqcore.errors import InvalidArgumentError
from mqcore.keys import KeySpace

__all__ = ["SqlDatabase", "redis_totals", "sql_totals"]

_DDL = (
    "CREATE TABLE IF NOT EXISTS mqcore_sink_rows ("
    " pipeline VARCHAR(200) NOT NULL, message_id VARCHAR(64) NOT NULL,"
    " part INTEGER NOT NULL, out_key VARCHAR(500), amount BIGINT NOT NULL,"
    " batch_id BIGINT NOT NULL,"
    " PRIMARY KEY (pipeline, part, message_id))",
    "CREATE TABLE IF NOT EXISTS mqcore_sink_batches ("
    " pipeline VARCHAR(200) PRIMARY KEY, batch_id BIGINT NOT NULL,"
    " end_offsets TEXT NOT NULL, committed_at_ms BIGINT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS mqcore_sink_stage ("
    " pipeline VARCHAR(200) NOT NULL, batch_id BIGINT NOT NULL,"
    " message_id VARCHAR(64) NOT NULL, part INTEGER NOT NULL, out_key VARCHAR(500),"
    " amount BIGINT NOT NULL, PRIMARY KEY (pipeline, batch_id, part, message_id))",
)
_STAGE_ROW = (
    "INSERT INTO mqcore_sink_stage (pipeline, batch_id, message_id, part, out_key, amount)"
    " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (pipeline, batch_id, part, message_id) DO NOTHING"
)
_PUBLISH_STAGED = (
    "INSERT INTO mqcore_sink_rows (pipeline, message_id, part, out_key, amount, batch_id)"
    " SELECT pipeline, message_id, part, out_key, amount, batch_id FROM mqcore_sink_stage"
    " WHERE pipeline = ? AND batch_id = ?"
    " ON CONFLICT (pipeline, part, message_id) DO UPDATE SET"
    " out_key = excluded.out_key, amount = excluded.amount, batch_id = excluded.batch_id"
)
_DDL_LOCK = 0x6D71636F7265  # PostgreSQL advisory lock of the tables' creation ('mqcore')
_DROP_STAGED = "DELETE FROM mqcore_sink_stage WHERE pipeline = ? AND batch_id <= ?"
_UPSERT_BATCH = (
    "INSERT INTO mqcore_sink_batches (pipeline, batch_id, end_offsets, committed_at_ms)"
    " VALUES (?, ?, ?, ?) ON CONFLICT (pipeline) DO UPDATE SET batch_id = excluded.batch_id,"
    " end_offsets = excluded.end_offsets, committed_at_ms = excluded.committed_at_ms"
)


def _connect(url: str) -> tuple[Any, str]:
    """A DB-API connection and its placeholder for ``sqlite:///path`` or ``postgresql://``."""
    scheme = urlsplit(url).scheme
    if scheme == "sqlite":
        path = url.split("sqlite:///", 1)[-1] if url.startswith("sqlite:///") else ""
        if not path:
            raise InvalidArgumentError(f"bad SQLite URL {url!r}: use sqlite:///path/to/file")
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, timeout=30, isolation_level=None)
        return conn, "?"
    if scheme in ("postgres", "postgresql"):
        import psycopg

        return psycopg.connect(url.replace("postgres://", "postgresql://", 1)), "%s"
    raise InvalidArgumentError(f"unsupported database URL {url!r}: use sqlite:/// or postgresql://")


class SqlDatabase:
    """The SQL side of the idempotent sink; one short transaction per batch."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.conn, self.mark = _connect(url)
        self.sqlite = self.mark == "?"
        self._run_ddl()

    def _q(self, sql: str) -> str:
        return sql if self.sqlite else sql.replace("?", "%s")

    def _begin(self) -> None:
        if self.sqlite:
            self.conn.execute("BEGIN IMMEDIATE")

    def _run_ddl(self) -> None:
        self._begin()
        cur = self.conn.cursor()
        if not self.sqlite:
            # CREATE TABLE IF NOT EXISTS is not safe against itself on PostgreSQL: two tasks
            # opening a fresh database at once can both create (a pg_type unique violation)
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (_DDL_LOCK,))
        for stmt in _DDL:
            cur.execute(stmt)
        self.conn.commit()

    def committed_batch(self, pipeline: str) -> int | None:
        """The batch id of the pipeline's marker row; None before its first commit."""
        cur = self.conn.cursor()
        cur.execute(
            self._q("SELECT batch_id FROM mqcore_sink_batches WHERE pipeline = ?"), (pipeline,)
        )
        row = cur.fetchone()
        if not self.sqlite:
            self.conn.rollback()
        return int(row[0]) if row else None

    def stage_rows(
        self, pipeline: str, batch_id: int, rows: list[tuple[str, int, str | None, int]]
    ) -> None:
        """Stage rows ``(message id, partition, key, amount)`` of a batch (an executor's
        share; a retried task stages the same rows again, which changes nothing)."""
        if not rows:
            return
        self._begin()
        try:
            self.conn.cursor().executemany(
                self._q(_STAGE_ROW),
                [(pipeline, batch_id, mid, part, key, amount) for mid, part, key, amount in rows],
            )
            self.conn.commit()
        except BaseException:
            self.conn.rollback()
            raise

    def commit_staged(
        self,
        pipeline: str,
        batch_id: int,
        offsets: Mapping[str, str],
        before_commit: Callable[[], None] | None = None,
    ) -> bool:
        """Publish the batch's staged rows (upsert by message id) with the marker row in one
        transaction, and drop the staging rows of this and older batches; False (nothing
        published) when the marker says the batch was committed before.

        ``before_commit`` is called with the transaction written but not committed yet.
        """
        self._begin()
        cur = self.conn.cursor()
        try:
            cur.execute(
                self._q("SELECT batch_id FROM mqcore_sink_batches WHERE pipeline = ?"), (pipeline,)
            )
            row = cur.fetchone()
            fresh = row is None or int(row[0]) < batch_id
            if fresh:
                cur.execute(self._q(_PUBLISH_STAGED), (pipeline, batch_id))
                marker = (pipeline, batch_id, json.dumps(dict(offsets), sort_keys=True), now_ms())
                cur.execute(self._q(_UPSERT_BATCH), marker)
            cur.execute(self._q(_DROP_STAGED), (pipeline, batch_id))
            if fresh and before_commit is not None:
                before_commit()
            self.conn.commit()
        except BaseException:
            self.conn.rollback()
            raise
        return fresh

    def staged_count(self, pipeline: str) -> int:
        """Rows waiting in the staging table for ``pipeline`` (0 after every commit)."""
        cur = self.conn.cursor()
        cur.execute(
            self._q("SELECT COUNT(*) FROM mqcore_sink_stage WHERE pipeline = ?"), (pipeline,)
        )
        count = int(cur.fetchone()[0])
        if not self.sqlite:
            self.conn.rollback()
        return count

    def totals(self, pipeline: str) -> dict[str, int]:
        """``{key: sum of amounts}`` over the pipeline's rows with a key."""
        cur = self.conn.cursor()
        cur.execute(
            self._q(
                "SELECT out_key, SUM(amount) FROM mqcore_sink_rows WHERE pipeline = ?"
                " AND out_key IS NOT NULL GROUP BY out_key"
            ),
            (pipeline,),
        )
        out = {str(k): int(v) for k, v in cur.fetchall()}
        if not self.sqlite:
            self.conn.rollback()
        return out

    def message_ids(self, pipeline: str) -> list[str]:
        """Every stored row as ``<partition>:<message id>``."""
        cur = self.conn.cursor()
        cur.execute(
            self._q("SELECT part, message_id FROM mqcore_sink_rows WHERE pipeline = ?"), (pipeline,)
        )
        out = [f"{r[0]}:{r[1]}" for r in cur.fetchall()]
        if not self.sqlite:
            self.conn.rollback()
        return out

    def close(self) -> None:
        self.conn.close()


def sql_totals(url: str, pipeline: str) -> dict[str, int]:
    """The SQL sink's ``{key: total}`` for ``pipeline`` in the database at ``url``."""
    db = SqlDatabase(url)
    try:
        return db.totals(pipeline)
    finally:
        db.close()


def redis_totals(client: RedisClient, keys: KeySpace, pipeline: str) -> dict[str, int]:
    """The Redis sinks' ``{key: total}`` for ``pipeline`` (its totals hash)."""
    raw: dict[bytes, bytes] = client.hgetall(keys.sink_output(pipeline, "totals"))
    return {k.decode(): int(v) for k, v in raw.items()}
