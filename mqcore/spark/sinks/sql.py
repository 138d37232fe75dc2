"""The idempotent SQL sink (``foreachBatch``, SQLite or PostgreSQL).

One database transaction upserts the batch's rows keyed by (pipeline,
partition, message id) and the pipeline's marker row (:class:`SqlDatabase`);
then the Redis checkpoint and the group position follow, idempotently
(marker-checked), so a crash between the two replays only the Redis step.
"""

from __future__ import annotations

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
from mqcore.spark.source import compare_ids

__all__ = ["SqlSink"]


class SqlSink:
    """``foreachBatch`` function: upsert by message id + marker row in one DB transaction.

    ``crash_hook`` is called at ``sql.before_db_commit`` (inside the open
    transaction) and ``sql.after_db_commit`` (before Redis follows).
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
            self.db.write_batch(
                self.ctx.pipeline,
                batch_id,
                rows,
                offsets,
                before_commit=lambda: self.crash_point("sql.before_db_commit", batch_id),
            )
        except Exception as exc:
            self.store.record_failed(
                self.ctx.pipeline, batch_id, run_id=self.ctx.run_id, reason=failure_reason(exc)
            )
            raise
        self.crash_point("sql.after_db_commit", batch_id)
        # Redis follows the DB: idempotent (marker-checked) record + group position.
        self.ctx.commit(self.store, batch_id, summary)
