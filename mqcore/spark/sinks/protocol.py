"""The protocol every exactly-once sink shares: plan, summarize, commit with the marker.

A pipeline hands every sink rows ``(partition, id, key, amount)``: ``key`` is
the output key (None: nothing to add, the row still advances the offsets).
Outputs are per-key totals and counts. A sink first records the batch as
planned (:meth:`SinkContext.plan`; a batch id at or below the sink's marker is
already committed and skipped), then applies the batch together with
"marker := batch id" in one atomic step, and records the checkpoint with the
pipeline group's new position (:meth:`SinkContext.commit`). A batch bigger than
``chunk`` fields is applied through the commit journal, ``chunk`` fields per
script, the marker with the last one (:mod:`mqcore.commit_journal`).

Crash points: every sink takes an optional :data:`CrashHook`, called as
``hook(point, batch_id)`` at each of the named :data:`CRASH_POINTS` (by
default nothing happens there). Fault tests pass a hook that kills the driver.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mqcore.checkpoints import CheckpointStore, PlanOutcome, Writer
from mqcore.commit_journal import DEFAULT_CHUNK
from mqcore.config import MQConfig
from mqcore.spark.source import max_id

__all__ = [
    "CRASH_POINTS",
    "OUT_COUNTS",
    "OUT_TOTALS",
    "BatchSummary",
    "CrashHook",
    "SinkContext",
    "failure_reason",
    "no_crash",
]

CRASH_POINTS = (
    "redis.before_commit",
    "redis.after_commit",
    "2pc.after_stage",
    "2pc.before_commit",
    "2pc.after_commit",
    "sql.after_stage",
    "sql.before_db_commit",
    "sql.after_db_commit",
)
OUT_TOTALS = 1  # output index of the totals hash
OUT_COUNTS = 2  # output index of the counts hash

CrashHook = Callable[[str, int], None]
"""Called as ``hook(point, batch_id)`` when a sink reaches a named crash point."""


def no_crash(point: str, batch_id: int) -> None:
    """The default :data:`CrashHook`: nothing happens at a crash point."""


def failure_reason(exc: BaseException) -> str:
    """How a failed batch's exception is recorded."""
    return f"{type(exc).__name__}: {exc}"


@dataclass(frozen=True)
class SinkContext:
    """Where a pipeline's sink writes; picklable (no client inside)."""

    config: MQConfig
    pipeline: str  # checkpoint name, e.g. ``order_totals.redis``
    topic: str
    group: str
    sink: str
    run_id: str
    chunk: int = DEFAULT_CHUNK  # fields per commit script (mqcore.commit_journal)

    def store(self) -> CheckpointStore:
        return CheckpointStore(self.config)

    def outputs(self) -> list[str]:
        keys = self.config.keys
        return [
            keys.sink_output(self.pipeline, "totals"),
            keys.sink_output(self.pipeline, "counts"),
        ]

    def writer(self) -> Writer:
        """Who writes the checkpoint: the run, topic, sink and group every record names."""
        return Writer(run_id=self.run_id, topic=self.topic, sink=self.sink, group=self.group)

    def plan(self, store: CheckpointStore, batch_id: int) -> PlanOutcome:
        return store.record_planned(self.pipeline, batch_id, self.writer())

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
            self.writer(),
            records=summary.records,
            acked_ids=summary.max_ids,
            end_offsets=offsets,
            chunk=self.chunk,
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
