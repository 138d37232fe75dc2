"""The idempotent SQL sink (``foreachBatch``, SQLite or PostgreSQL).

The executors write the batch into a staging table keyed by (pipeline, batch
id, partition, message id), each task its own share in its own transaction
(a retried task stages the same rows again, which changes nothing), and hand
the driver only a summary per Redis partition (rows and last id). The driver
then commits: one database transaction publishes the staged rows, upserted by
(pipeline, partition, message id), together with the pipeline's marker row,
and drops the staging rows (:class:`SqlDatabase`). So a batch never has to fit
in the driver's memory. Then the Redis checkpoint and the group position
follow, idempotently (marker-checked), so a crash between the two replays only
the Redis step. SQLite suits executors on one machine (local and
local-cluster masters); a cluster of machines needs PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from mqcore.checkpoints import CheckpointStore, PlanOutcome
from mqcore.sinkstate import SqlDatabase
from mqcore.spark.sinks.protocol import (
    BatchSummary,
    CrashHook,
    SinkContext,
    failure_reason,
    no_crash,
)
from mqcore.spark.source import compare_ids, max_id

__all__ = ["SqlSink", "stage_batches"]

STAGE_SUMMARY = "partition int, records long, last_id string"


def stage_batches(
    database_url: str, pipeline: str, batch_id: int
) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The ``mapInArrow`` function of one batch: stage each Arrow batch of rows
    ``(id, partition, key, amount)``, then yield one summary row per Redis partition."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        counts: dict[int, int] = {}
        last: dict[int, str] = {}
        db = SqlDatabase(database_url)
        try:
            for rb in batches:
                cols = rb.to_pydict()
                rows = [
                    (mid, int(part), key, int(amount or 0))
                    for mid, part, key, amount in zip(
                        cols["id"], cols["partition"], cols["key"], cols["amount"], strict=True
                    )
                ]
                db.stage_rows(pipeline, batch_id, rows)
                for mid, part, _key, _amount in rows:
                    counts[part] = counts.get(part, 0) + 1
                    last[part] = max_id(last.get(part, "0-0"), mid)
        finally:
            db.close()
        parts = sorted(counts)
        yield pa.RecordBatch.from_pydict(
            {
                "partition": pa.array(parts, pa.int32()),
                "records": pa.array([counts[p] for p in parts], pa.int64()),
                "last_id": pa.array([last[p] for p in parts], pa.string()),
            }
        )

    return run


class SqlSink:
    """``foreachBatch`` function: executors stage, the driver commits rows + marker.

    ``crash_hook`` is called at ``sql.after_stage`` (rows staged, nothing
    committed), ``sql.before_db_commit`` (inside the open transaction) and
    ``sql.after_db_commit`` (before Redis follows).
    """

    def __init__(
        self, ctx: SinkContext, database_url: str, crash_hook: CrashHook | None = None
    ) -> None:
        self.ctx = ctx
        self.database_url = database_url
        self.crash_point: CrashHook = crash_hook or no_crash
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
        pipeline = self.ctx.pipeline
        summary = BatchSummary()
        try:
            staged = (
                df.select("id", "partition", "key", "amount")
                .mapInArrow(stage_batches(self.database_url, pipeline, batch_id), STAGE_SUMMARY)
                .collect()
            )
            for row in staged:
                summary.add(row["partition"], row["last_id"], None, 0, int(row["records"]))
            self.crash_point("sql.after_stage", batch_id)
            previous = self.store.summary(pipeline) or {}
            offsets = dict(previous.get("end_offsets") or {})
            for part, entry_id in summary.max_ids.items():
                if compare_ids(entry_id, offsets.get(part, "0-0")) > 0:
                    offsets[part] = entry_id
            self.db.commit_staged(
                pipeline,
                batch_id,
                offsets,
                before_commit=lambda: self.crash_point("sql.before_db_commit", batch_id),
            )
        except Exception as exc:
            self.store.record_failed(
                pipeline, batch_id, run_id=self.ctx.run_id, reason=failure_reason(exc)
            )
            raise
        self.crash_point("sql.after_db_commit", batch_id)
        # Redis follows the DB: idempotent (marker-checked) record + group position.
        self.ctx.commit(self.store, batch_id, summary)
