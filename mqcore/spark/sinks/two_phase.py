"""The two-phase-commit sink: ``writeStream.format("mqcore_2pc")``.

Tasks (on executors) stage their increments in hashes of at most ``commit_chunk``
fields, under keys named by the run id, attempt, batch id, task id and chunk, with a
TTL; ``commit`` (on the driver) applies exactly the staged hashes its successful
tasks named, with the marker, acks and checkpoint record: in one script, or through
the commit journal for a big batch (:mod:`mqcore.commit_journal`); ``abort``
deletes them (unless the journal holds the batch).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from pyspark.sql.datasource import (
    DataSource,
    DataSourceStreamWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from mqcore.checkpoints import CheckpointStore, PlanOutcome
from mqcore.commit_journal import (
    DEFAULT_CHUNK,
    DEFAULT_STAGE_TTL_S,
    CommitJournal,
    Stage,
    write_stage,
)
from mqcore.errors import InvalidArgumentError
from mqcore.spark.sinks.protocol import BatchSummary, CrashHook, SinkContext, no_crash
from mqcore.spark.source import config_from_options, positive_option

__all__ = ["StagedTask", "TwoPhaseSinkSource", "TwoPhaseWriter"]

BATCH_ID_PROPERTY = "streaming.sql.batchId"  # set by Spark on every micro-batch job


@dataclass
class StagedTask(WriterCommitMessage):
    """What one write task staged: its stage hashes (none when it saw no keys) and summary."""

    stages: list[Stage]
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
        chunk=_option(options, "commit_chunk", DEFAULT_CHUNK),
    )


def _option(options: Mapping[str, str], name: str, default: int) -> int:
    return positive_option(name, str(options.get(name) or default).strip())


class TwoPhaseWriter(DataSourceStreamWriter):
    """Stage per task (executors), commit atomically with the marker (driver).

    ``crash_hook`` is called at ``2pc.after_stage`` (in the task),
    ``2pc.before_commit`` and ``2pc.after_commit``; Spark pickles the writer to
    the executors, so the hook must be picklable (a module-level function).
    """

    def __init__(self, options: Mapping[str, str], crash_hook: CrashHook | None = None) -> None:
        self.ctx = _ctx_from_options(options)
        self.stage_ttl_s = _option(options, "stage_ttl_s", DEFAULT_STAGE_TTL_S)
        self.crash_point: CrashHook = crash_hook or no_crash

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
            stages = write_stage(
                store.client,
                self.ctx.config.keys,
                pipeline=self.ctx.pipeline,
                run=f"{self.ctx.run_id}.{task.attemptNumber()}",
                batch=batch_id,
                task=task.partitionId(),
                fields={f"{idx}|{key}": n for idx, key, n in summary.increments()},
                chunk=self.ctx.chunk,
                ttl_s=self.stage_ttl_s,
            )
        finally:
            store.client.close()
        self.crash_point("2pc.after_stage", batch_id)
        return StagedTask(stages, summary, batch_id)

    @staticmethod
    def _tasks(messages: Iterable[WriterCommitMessage | None]) -> list[StagedTask]:
        return [m for m in messages if isinstance(m, StagedTask)]

    def _staged(self, messages: Iterable[WriterCommitMessage | None]) -> list[Stage]:
        return [stage for m in self._tasks(messages) for stage in m.stages]

    def _discard(self, store: CheckpointStore, batch_id: int, stages: list[Stage]) -> None:
        journal = CommitJournal(store.client, self.ctx.config.keys, self.ctx.pipeline)
        journal.discard(batch_id, [key for key, _ in stages])

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        store = self.ctx.store()
        try:
            stages = self._staged(messages)
            if self.ctx.plan(store, batchId) == PlanOutcome.COMMITTED:
                self._discard(store, batchId, stages)
                return
            summary = BatchSummary()
            for message in self._tasks(messages):
                summary.merge(message.summary)
            self.crash_point("2pc.before_commit", batchId)
            self.ctx.commit(store, batchId, summary, outputs=self.ctx.outputs(), stages=stages)
            self.crash_point("2pc.after_commit", batchId)
        finally:
            store.client.close()

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        store = self.ctx.store()
        try:
            self._discard(store, batchId, self._staged(messages))
            store.record_failed(
                self.ctx.pipeline, batchId, run_id=self.ctx.run_id, reason="aborted: a task failed"
            )
        finally:
            store.client.close()


class TwoPhaseSinkSource(DataSource):
    """``writeStream.format("mqcore_2pc")``: options redis_url, topic, pipeline, group, run_id.

    Its writers call no crash hook; register :meth:`with_crash_hook` instead to
    inject one (options are strings, so the hook travels with the class).
    """

    crash_hooks: ClassVar[tuple[CrashHook, ...]] = ()

    @classmethod
    def name(cls) -> str:
        return "mqcore_2pc"

    @classmethod
    def with_crash_hook(cls, hook: CrashHook) -> type[TwoPhaseSinkSource]:
        """The same data source (same name) whose writers call ``hook`` at each crash point."""
        return type("TwoPhaseSinkSourceWithCrashHook", (cls,), {"crash_hooks": (hook,)})

    def streamWriter(self, schema: StructType, overwrite: bool) -> TwoPhaseWriter:
        hook = self.crash_hooks[0] if self.crash_hooks else None
        return TwoPhaseWriter(self.options, crash_hook=hook)
