"""Exactly-once sinks for pipelines that keep keyed sums (docs/checkpoints.md).

A pipeline hands every sink rows ``(partition, id, key, amount)``: ``key`` is
the output key (None: nothing to add, the row still advances the offsets).
Outputs are per-key totals and counts.

1. :class:`RedisAtomicSink` (``foreachBatch``): the batch's increments, the
   committed-batch marker, the pipeline group's position and the checkpoint
   record in ONE Lua script; a replayed batch id is skipped.
2. :class:`TwoPhaseSinkSource` (``format("mqcore_2pc")``, a DataSourceStreamWriter):
   tasks stage their increments under keys with the run id (TTL); ``commit``
   applies the staged hashes atomically with the marker; ``abort`` deletes them.
3. :class:`SqlSink` (``foreachBatch``): upsert keyed by (partition, message id) plus the batch
   marker row in one database transaction (SQLite or PostgreSQL); the Redis
   checkpoint and group position follow idempotently.

Crash points for fault tests (:data:`CRASH_POINTS`):
``MQCORE_CRASH_AT=<point>[@<min batch id>][,<point>[@<min batch id>]...]`` kills
the driver's whole process group (``kill -9``) at the first armed point reached,
also from an executor's Python worker (``$MQCORE_DRIVER_PGID`` names the
driver's group). With ``$MQCORE_CRASH_LOG`` set, the point and batch id are
appended to that file as ``<point>@<batch id>`` right before the kill.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pyspark.sql.datasource import (
    DataSource,
    DataSourceStreamWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from mqcore.checkpoints import CheckpointStore, PlanOutcome
from mqcore.config import MQConfig
from mqcore.errors import InvalidArgumentError
from mqcore.spark.source import compare_ids, config_from_options, max_id

__all__ = [
    "CRASH_ENV",
    "CRASH_LOG_ENV",
    "CRASH_POINTS",
    "DEFAULT_STAGE_TTL_S",
    "AtLeastOnceRedisSink",
    "BatchSummary",
    "RedisAtomicSink",
    "SinkContext",
    "SqlSink",
    "TwoPhaseSinkSource",
    "crash_point",
    "crash_points",
    "sql_totals",
]

CRASH_ENV = "MQCORE_CRASH_AT"
CRASH_LOG_ENV = "MQCORE_CRASH_LOG"  # optional file: each crash appends "<point>@<batch id>"
CRASH_POINTS = (
    "redis.before_commit",
    "redis.after_commit",
    "2pc.after_stage",
    "2pc.before_commit",
    "2pc.after_commit",
    "sql.before_db_commit",
    "sql.after_db_commit",
)
DRIVER_PGID_ENV = "MQCORE_DRIVER_PGID"  # set by the driver; inherited by Spark workers
DEFAULT_STAGE_TTL_S = 24 * 3600
OUT_TOTALS = 1  # output index of the totals hash
OUT_COUNTS = 2  # output index of the counts hash
BATCH_ID_PROPERTY = "streaming.sql.batchId"  # set by Spark on every micro-batch job


def crash_points(value: str) -> dict[str, int]:
    """Parse ``$MQCORE_CRASH_AT``: comma-separated ``<point>[@<min batch id>]`` -> point: min id."""
    armed: dict[str, int] = {}
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        point, _, min_batch = item.partition("@")
        if point not in CRASH_POINTS or not (min_batch or "0").isdecimal():
            raise InvalidArgumentError(
                f"bad {CRASH_ENV} item {item!r}: use <point>[@<min batch id>] with a point"
                f" of {', '.join(CRASH_POINTS)}"
            )
        armed[point] = int(min_batch or 0)
    return armed


def crash_point(name: str, batch_id: int) -> None:
    """Die like ``kill -9`` of the driver when ``$MQCORE_CRASH_AT`` arms this point."""
    wanted = os.environ.get(CRASH_ENV, "")
    if not wanted:
        return
    min_batch = crash_points(wanted).get(name)
    if min_batch is None or batch_id < min_batch:
        return
    log = os.environ.get(CRASH_LOG_ENV)
    if log:  # one small O_APPEND write: survives the kill, never interleaves
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, f"{name}@{batch_id}\n".encode())
        finally:
            os.close(fd)
    # Python workers run in the pyspark daemon's own group: kill the driver's first.
    driver = int(os.environ.get(DRIVER_PGID_ENV) or os.getpgrp())
    os.killpg(driver, signal.SIGKILL)
    os.killpg(os.getpgrp(), signal.SIGKILL)


@dataclass(frozen=True)
class SinkContext:
    """Where a pipeline's sink writes; picklable (no client inside)."""

    config: MQConfig
    pipeline: str  # checkpoint name, e.g. ``order_totals.redis``
    topic: str
    group: str
    sink: str
    run_id: str

    def store(self) -> CheckpointStore:
        return CheckpointStore(self.config)

    def outputs(self) -> list[str]:
        keys = self.config.keys
        return [
            keys.sink_output(self.pipeline, "totals"),
            keys.sink_output(self.pipeline, "counts"),
        ]

    def plan(self, store: CheckpointStore, batch_id: int) -> PlanOutcome:
        return store.record_planned(
            self.pipeline,
            batch_id,
            run_id=self.run_id,
            topic=self.topic,
            sink=self.sink,
            group=self.group,
        )

    def commit(
        self, store: CheckpointStore, batch_id: int, summary: BatchSummary, **kw: Any
    ) -> bool:
        previous = store.summary(self.pipeline) or {}
        offsets = dict(previous.get("end_offsets") or {})
        for part, entry_id in summary.max_ids.items():
            offsets[part] = max_id(offsets.get(part, "0-0"), entry_id)
        return store.record_committed(
            self.pipeline,
            batch_id,
            run_id=self.run_id,
            topic=self.topic,
            sink=self.sink,
            group=self.group,
            records=summary.records,
            acked_ids=summary.max_ids,
            end_offsets=offsets,
            **kw,
        )


@dataclass
class BatchSummary:
    """Per-key sums and counts of a batch, its size and its last id per partition."""

    totals: dict[str, int] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    records: int = 0
    max_ids: dict[str, str] = field(default_factory=dict)

    def add(self, partition: int, entry_id: str, key: str | None, amount: int, n: int = 1) -> None:
        self.records += n
        part = str(partition)
        self.max_ids[part] = max_id(self.max_ids.get(part, "0-0"), entry_id)
        if key is not None:
            self.totals[key] = self.totals.get(key, 0) + int(amount)
            self.counts[key] = self.counts.get(key, 0) + n

    def merge(self, other: BatchSummary) -> None:
        self.records += other.records
        for part, entry_id in other.max_ids.items():
            self.max_ids[part] = max_id(self.max_ids.get(part, "0-0"), entry_id)
        for key, amount in other.totals.items():
            self.totals[key] = self.totals.get(key, 0) + amount
        for key, n in other.counts.items():
            self.counts[key] = self.counts.get(key, 0) + n

    def increments(self) -> list[tuple[int, str, int]]:
        out = [(OUT_TOTALS, k, v) for k, v in sorted(self.totals.items())]
        out += [(OUT_COUNTS, k, v) for k, v in sorted(self.counts.items())]
        return out


def summarize(df: Any) -> BatchSummary:
    """One Spark job: group the batch by (partition, key), keep sums, counts and last ids."""
    from pyspark.sql import functions as F

    parts = F.split(F.col("id"), "-")
    grouped = (
        df.select(
            "partition",
            "key",
            F.coalesce(F.col("amount"), F.lit(0)).cast("long").alias("amount"),
            parts.getItem(0).cast("long").alias("ms"),
            parts.getItem(1).cast("long").alias("seq"),
        )
        .groupBy("partition", "key")
        .agg(
            F.sum("amount").alias("total"),
            F.count(F.lit(1)).alias("n"),
            F.max(F.struct("ms", "seq")).alias("last"),
        )
        .collect()
    )
    summary = BatchSummary()
    for row in grouped:
        last = f"{row['last']['ms']}-{row['last']['seq']}"
        summary.add(row["partition"], last, row["key"], int(row["total"] or 0), int(row["n"]))
    return summary


def _reason(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class RedisAtomicSink:
    """``foreachBatch`` function: the batch, marker, acks and checkpoint in one script."""

    def __init__(self, ctx: SinkContext) -> None:
        self.ctx = ctx
        self._store: CheckpointStore | None = None

    @property
    def store(self) -> CheckpointStore:
        if self._store is None:
            self._store = self.ctx.store()
        return self._store

    def __call__(self, df: Any, batch_id: int) -> None:
        if self.ctx.plan(self.store, batch_id) == PlanOutcome.COMMITTED:
            return
        try:
            summary = summarize(df)
        except Exception as exc:
            self.store.record_failed(
                self.ctx.pipeline, batch_id, run_id=self.ctx.run_id, reason=_reason(exc)
            )
            raise
        crash_point("redis.before_commit", batch_id)
        self.ctx.commit(
            self.store,
            batch_id,
            summary,
            outputs=self.ctx.outputs(),
            increments=summary.increments(),
        )
        crash_point("redis.after_commit", batch_id)


class AtLeastOnceRedisSink:
    """The same query's plain sink (benchmark baseline): increments without a marker."""

    def __init__(self, ctx: SinkContext) -> None:
        self.ctx = ctx

    def __call__(self, df: Any, batch_id: int) -> None:
        summary = summarize(df)
        client = self.ctx.config.client()
        try:
            totals, counts = self.ctx.outputs()
            pipe = client.pipeline(transaction=False)
            for key, amount in summary.totals.items():
                pipe.hincrby(totals, key, amount)
            for key, n in summary.counts.items():
                pipe.hincrby(counts, key, n)
            pipe.execute()
        finally:
            client.close()


# --- 2. two-phase commit -----------------------------------------------------


@dataclass
class StagedTask(WriterCommitMessage):
    """What one write task staged: its stage key (None when it saw no rows) and summary."""

    stage_key: str | None
    summary: BatchSummary
    batch_id: int


def _ctx_from_options(options: Mapping[str, str]) -> SinkContext:
    missing = [n for n in ("topic", "pipeline", "group", "run_id") if not options.get(n)]
    if missing:
        raise InvalidArgumentError(f"mqcore_2pc sink needs options: {', '.join(missing)}")
    return SinkContext(
        config=config_from_options(options),
        pipeline=options["pipeline"],
        topic=options["topic"],
        group=options["group"],
        sink=options.get("sink", "2pc"),
        run_id=options["run_id"],
    )


class TwoPhaseWriter(DataSourceStreamWriter):
    """Stage per task (executors), commit atomically with the marker (driver)."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.ctx = _ctx_from_options(options)
        self.stage_ttl_s = int(options.get("stage_ttl_s", DEFAULT_STAGE_TTL_S))

    def write(self, iterator: Iterator[Any]) -> StagedTask:
        from pyspark import TaskContext

        task = TaskContext.get()
        assert task is not None
        batch_id = int(task.getLocalProperty(BATCH_ID_PROPERTY) or -1)
        summary = BatchSummary()
        for row in iterator:
            summary.add(row["partition"], row["id"], row["key"], int(row["amount"] or 0))
        store = self.ctx.store()
        try:
            self.ctx.plan(store, batch_id)
            if not summary.records:
                return StagedTask(None, summary, batch_id)
            run = f"{self.ctx.run_id}.{task.attemptNumber()}"
            stage = self.ctx.config.keys.sink_stage(
                self.ctx.pipeline, run, batch_id, task.partitionId()
            )
            fields = {f"{idx}|{key}": n for idx, key, n in summary.increments()}
            pipe = store.client.pipeline(transaction=True)
            pipe.delete(stage)
            if fields:
                pipe.hset(stage, mapping=fields)
            pipe.hset(stage, "_records", summary.records)
            pipe.expire(stage, self.stage_ttl_s)
            pipe.execute()
        finally:
            store.client.close()
        crash_point("2pc.after_stage", batch_id)
        return StagedTask(stage, summary, batch_id)

    @staticmethod
    def _tasks(messages: Iterable[WriterCommitMessage | None]) -> list[StagedTask]:
        return [m for m in messages if isinstance(m, StagedTask)]

    def _staged(self, messages: Iterable[WriterCommitMessage | None]) -> list[str]:
        return [m.stage_key for m in self._tasks(messages) if m.stage_key]

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        store = self.ctx.store()
        try:
            stages = self._staged(messages)
            if self.ctx.plan(store, batchId) == PlanOutcome.COMMITTED:
                if stages:
                    store.client.delete(*stages)
                return
            summary = BatchSummary()
            for message in self._tasks(messages):
                summary.merge(message.summary)
            crash_point("2pc.before_commit", batchId)
            self.ctx.commit(store, batchId, summary, outputs=self.ctx.outputs(), stage_keys=stages)
            crash_point("2pc.after_commit", batchId)
        finally:
            store.client.close()

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        store = self.ctx.store()
        try:
            stages = self._staged(messages)
            if stages:
                store.client.delete(*stages)
            store.record_failed(
                self.ctx.pipeline, batchId, run_id=self.ctx.run_id, reason="aborted: a task failed"
            )
        finally:
            store.client.close()


class TwoPhaseSinkSource(DataSource):
    """``writeStream.format("mqcore_2pc")``: options redis_url, topic, pipeline, group, run_id."""

    @classmethod
    def name(cls) -> str:
        return "mqcore_2pc"

    def streamWriter(self, schema: StructType, overwrite: bool) -> TwoPhaseWriter:
        return TwoPhaseWriter(self.options)


# --- 3. idempotent SQL -------------------------------------------------------

_DDL = (
    "CREATE TABLE IF NOT EXISTS mqcore_sink_rows ("
    " pipeline VARCHAR(200) NOT NULL, message_id VARCHAR(64) NOT NULL,"
    " part INTEGER NOT NULL, out_key VARCHAR(500), amount BIGINT NOT NULL,"
    " batch_id BIGINT NOT NULL,"
    " PRIMARY KEY (pipeline, part, message_id))",
    "CREATE TABLE IF NOT EXISTS mqcore_sink_batches ("
    " pipeline VARCHAR(200) PRIMARY KEY, batch_id BIGINT NOT NULL,"
    " end_offsets TEXT NOT NULL, committed_at_ms BIGINT NOT NULL)",
)
_UPSERT_ROW = (
    "INSERT INTO mqcore_sink_rows (pipeline, message_id, part, out_key, amount, batch_id)"
    " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (pipeline, part, message_id) DO UPDATE SET"
    " out_key = excluded.out_key, amount = excluded.amount,"
    " batch_id = excluded.batch_id"
)
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
        for stmt in _DDL:
            cur.execute(stmt)
        self.conn.commit()

    def committed_batch(self, pipeline: str) -> int | None:
        cur = self.conn.cursor()
        cur.execute(
            self._q("SELECT batch_id FROM mqcore_sink_batches WHERE pipeline = ?"), (pipeline,)
        )
        row = cur.fetchone()
        if not self.sqlite:
            self.conn.rollback()
        return int(row[0]) if row else None

    def write_batch(
        self,
        pipeline: str,
        batch_id: int,
        rows: list[tuple[str, int, str | None, int]],
        offsets: Mapping[str, str],
    ) -> bool:
        """Upsert rows + marker in one transaction; False when the batch was committed before."""
        self._begin()
        cur = self.conn.cursor()
        try:
            cur.execute(
                self._q("SELECT batch_id FROM mqcore_sink_batches WHERE pipeline = ?"), (pipeline,)
            )
            row = cur.fetchone()
            if row is not None and int(row[0]) >= batch_id:
                self.conn.rollback()
                return False
            cur.executemany(
                self._q(_UPSERT_ROW),
                [(pipeline, mid, part, key, amount, batch_id) for mid, part, key, amount in rows],
            )
            cur.execute(
                self._q(_UPSERT_BATCH),
                (
                    pipeline,
                    batch_id,
                    json.dumps(dict(offsets), sort_keys=True),
                    int(time.time() * 1000),
                ),
            )
            crash_point("sql.before_db_commit", batch_id)
            self.conn.commit()
        except BaseException:
            self.conn.rollback()
            raise
        return True

    def totals(self, pipeline: str) -> dict[str, int]:
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
    db = SqlDatabase(url)
    try:
        return db.totals(pipeline)
    finally:
        db.close()


class SqlSink:
    """``foreachBatch`` function: upsert by message id + marker row in one DB transaction."""

    def __init__(self, ctx: SinkContext, database_url: str) -> None:
        self.ctx = ctx
        self.database_url = database_url
        self._store: CheckpointStore | None = None
        self._db: SqlDatabase | None = None

    @property
    def store(self) -> CheckpointStore:
        if self._store is None:
            self._store = self.ctx.store()
        return self._store

    @property
    def db(self) -> SqlDatabase:
        if self._db is None:
            self._db = SqlDatabase(self.database_url)
        return self._db

    def __call__(self, df: Any, batch_id: int) -> None:
        if self.ctx.plan(self.store, batch_id) == PlanOutcome.COMMITTED:
            return
        summary = BatchSummary()
        rows: list[tuple[str, int, str | None, int]] = []
        try:
            for row in df.select("id", "partition", "key", "amount").collect():
                amount = int(row["amount"] or 0)
                summary.add(row["partition"], row["id"], row["key"], amount)
                rows.append((row["id"], int(row["partition"]), row["key"], amount))
            previous = self.store.summary(self.ctx.pipeline) or {}
            offsets = dict(previous.get("end_offsets") or {})
            for part, entry_id in summary.max_ids.items():
                if compare_ids(entry_id, offsets.get(part, "0-0")) > 0:
                    offsets[part] = entry_id
            self.db.write_batch(self.ctx.pipeline, batch_id, rows, offsets)
        except Exception as exc:
            self.store.record_failed(
                self.ctx.pipeline, batch_id, run_id=self.ctx.run_id, reason=_reason(exc)
            )
            raise
        crash_point("sql.after_db_commit", batch_id)
        # Redis follows the DB: idempotent (marker-checked) record + group position.
        self.ctx.commit(self.store, batch_id, summary)
