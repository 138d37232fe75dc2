"""The Redis atomic sink (``foreachBatch``) and its at-least-once benchmark baseline.

:class:`RedisAtomicSink` aggregates the batch in one Spark job, then one Lua
script applies the increments, the committed-batch marker, the pipeline
group's position and the checkpoint record (a batch bigger than the context's
``chunk`` goes through the commit journal); a replayed batch id is skipped.
"""

from __future__ import annotations

from typing import Any

from mqcore.checkpoints import CheckpointStore, PlanOutcome
from mqcore.spark.sinks.protocol import (
    BatchSummary,
    CrashHook,
    SinkContext,
    failure_reason,
    no_crash,
)

__all__ = ["AtLeastOnceRedisSink", "RedisAtomicSink", "summarize"]


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


class RedisAtomicSink:
    """``foreachBatch`` function: the batch, marker, acks and checkpoint in one script.

    ``crash_hook`` is called at ``redis.before_commit`` and ``redis.after_commit``.
    """

    def __init__(self, ctx: SinkContext, crash_hook: CrashHook | None = None) -> None:
        self.ctx = ctx
        self.crash_point: CrashHook = crash_hook or no_crash
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
                self.ctx.pipeline, batch_id, run_id=self.ctx.run_id, reason=failure_reason(exc)
            )
            raise
        self.crash_point("redis.before_commit", batch_id)
        self.ctx.commit(
            self.store,
            batch_id,
            summary,
            outputs=self.ctx.outputs(),
            increments=summary.increments(),
        )
        self.crash_point("redis.after_commit", batch_id)


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
