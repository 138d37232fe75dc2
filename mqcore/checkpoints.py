"""Checkpoint records of stream pipelines, readable by anyone (docs/checkpoints.md).

One record per pipeline and batch id (a hash), an index zset per pipeline, a
meta hash with counters and the latest ids, and the sink's committed-batch
marker. Every state change is one Lua script, and the commit of a batch (sink
writes + marker + consumer-group position + record) is a single script, so a
crash anywhere leaves either the old or the new state, never a mix; a batch too
big for one script goes through the commit journal (:mod:`mqcore.commit_journal`),
whose marker, position and record move with its last step.

Statuses: ``in_progress`` (planned, not committed), ``completed``, ``failed``,
``restored`` (a restart found it planned but not committed by an earlier run and
replays it; it becomes ``completed`` with ``restored=1`` when the replay commits).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from enum import StrEnum
from typing import Any, NamedTuple

import msgspec

from mqcore import clock
from mqcore.codec import decode_text
from mqcore.commit_journal import DEFAULT_CHUNK, INLINE_STAGES, CommitJournal, GroupHook, Stage
from mqcore.config import MQConfig, RedisClient
from mqcore.errors import InvalidArgumentError
from mqcore.keys import validate_name
from mqcore.models import PipelineSummary
from mqcore.scripts import call_script
from mqcore.topics import set_members

__all__ = [
    "DEFAULT_RETAINED_BATCHES",
    "CheckpointStatus",
    "CheckpointStore",
    "PlanOutcome",
    "Writer",
    "new_run_id",
    "pipeline_summary",
]

DEFAULT_RETAINED_BATCHES = 1000


class Writer(NamedTuple):
    """The run, topic, sink and group each checkpoint record of a pipeline names (``group``
    "": a sink that moves no group; a commit needs one)."""

    run_id: str
    topic: str
    sink: str
    group: str = ""


_TRIM_STEP = 200  # records deleted per trim call (bounded work per batch)
_INT_FIELDS = (
    "batch_id",
    "trigger_at_ms",
    "planned_at_ms",
    "committed_at_ms",
    "failed_at_ms",
    "restored_at_ms",
    "duration_ms",
    "records",
    "acked",
    "acked_partitions",
)
_META_INTS = (
    "triggered",
    "in_progress",
    "completed",
    "failed",
    "restored",
    "last_planned_id",
    "last_completed_id",
    "last_completed_at_ms",
    "last_failed_id",
    "last_failed_at_ms",
    "last_restore_id",
    "last_restore_at_ms",
)


class CheckpointStatus(StrEnum):
    IN_PROGRESS = "in_progress"  # planned by the running query, not committed yet
    COMPLETED = "completed"  # the sink committed it (writes + marker + acks)
    FAILED = "failed"  # the batch raised or was aborted; Spark retries it on restart
    RESTORED = "restored"  # a restart is replaying it after an earlier run left it uncommitted


class PlanOutcome(StrEnum):
    PLANNED = "planned"  # new batch (or the same run planning it again)
    RESTORED = "restored"  # an earlier run planned it and never committed: replay it
    COMMITTED = "committed"  # the sink committed it already: skip the replay


def new_run_id() -> str:
    """A short unique id for one run of a pipeline driver."""
    return uuid.uuid4().hex[:12]


def _decode(raw: Mapping[Any, Any]) -> dict[str, str]:
    return {decode_text(k): decode_text(v) for k, v in raw.items()}


def _ints(data: dict[str, Any], fields: Iterable[str]) -> None:
    for name in fields:
        value = data.get(name)
        if value in (None, ""):
            data[name] = None
            continue
        try:
            data[name] = int(str(value))
        except (TypeError, ValueError):
            data[name] = None


def _json_field(data: dict[str, Any], name: str, default: Any) -> None:
    raw = data.get(name)
    try:
        data[name] = json.loads(raw) if raw else default
    except (TypeError, ValueError):
        data[name] = default


def pipeline_summary(pipeline: str, raw: Mapping[Any, Any]) -> PipelineSummary | None:
    """The typed summary of ``pipeline``'s meta hash ``raw`` (an ``HGETALL`` reply); None
    when it has none. Counters below zero read as 0, an id that is not a number as None,
    ``end_offsets`` that are not a JSON object as ``{}``."""
    if not raw:
        return None
    data: dict[str, Any] = _decode(raw)
    _ints(data, _META_INTS)
    _json_field(data, "end_offsets", {})
    offsets = data["end_offsets"]
    return PipelineSummary(
        pipeline=pipeline,
        topic=data.get("topic") or "",
        sink=data.get("sink") or "",
        group=data.get("group") or "",
        triggered=max(data["triggered"] or 0, 0),
        in_progress=max(data["in_progress"] or 0, 0),
        last_planned_id=data["last_planned_id"],
        completed=max(data["completed"] or 0, 0),
        last_completed_id=data["last_completed_id"],
        last_completed_at_ms=data["last_completed_at_ms"],
        end_offsets=offsets if isinstance(offsets, dict) else {},
        failed=max(data["failed"] or 0, 0),
        restored=max(data["restored"] or 0, 0),
        last_failed_id=data["last_failed_id"],
        last_failed_at_ms=data["last_failed_at_ms"],
        last_restore_id=data["last_restore_id"],
        last_restore_at_ms=data["last_restore_at_ms"],
        last_failure_reason=data.get("last_failure_reason") or "",
        last_restore_outcome=data.get("last_restore_outcome") or "",
        last_restore_from_run=data.get("last_restore_from_run") or "",
    )


class CheckpointStore:
    """Reads and writes checkpoint records of pipelines on one MQ deployment."""

    def __init__(
        self,
        config: MQConfig,
        client: RedisClient | None = None,
        *,
        retained: int = DEFAULT_RETAINED_BATCHES,
    ) -> None:
        self.config = config
        self.keys = config.keys
        self.client = client if client is not None else config.client()
        self.retained = retained

    def _rec_keys(self, pipeline: str, batch_id: int) -> list[str]:
        validate_name("pipeline", pipeline)
        return [
            self.keys.checkpoint(pipeline, batch_id),
            self.keys.checkpoint_index(pipeline),
            self.keys.checkpoint_meta(pipeline),
        ]

    # --- writes -------------------------------------------------------------
    def record_planned(
        self,
        pipeline: str,
        batch_id: int,
        writer: Writer,
        *,
        start_offsets: Mapping[str, str] | None = None,
        now_ms: int | None = None,
    ) -> PlanOutcome:
        """Mark a batch in progress; tells whether it is new, a restore or a committed replay."""
        keys = [
            *self._rec_keys(pipeline, batch_id),
            self.keys.pipelines(),
            self.keys.sink_marker(pipeline),
        ]
        args: list[Any] = [
            pipeline,
            int(batch_id),
            writer.run_id,
            now_ms or clock.now_ms(),
            writer.topic,
            writer.sink,
            writer.group,
            json.dumps(dict(start_offsets or {})),
        ]
        reply = call_script(self.client, "checkpoint_plan", keys, args)
        return PlanOutcome(decode_text(reply))

    def record_restore(self, pipeline: str, batch_id: int, writer: Writer) -> PlanOutcome:
        """Explicitly re-plan a batch in a new run (records a restore when it was uncommitted)."""
        return self.record_planned(pipeline, batch_id, writer)

    def record_committed(
        self,
        pipeline: str,
        batch_id: int,
        writer: Writer,
        *,
        records: int,
        acked_ids: Mapping[str, str],
        end_offsets: Mapping[str, str] | None = None,
        outputs: Sequence[str] = (),
        increments: Iterable[tuple[int, str, int]] = (),
        stages: Sequence[Stage] = (),
        chunk: int = DEFAULT_CHUNK,
        on_group: GroupHook | None = None,
        now_ms: int | None = None,
    ) -> bool:
        """Commit a batch exactly once; False (and nothing written) when it was committed before.

        ``outputs`` are hash keys; ``increments`` are ``(output index from 1, field, n)``;
        ``stages`` are staged hashes (:func:`mqcore.commit_journal.write_stage`: fields
        ``"<output index>|<field>"`` -> n, and their field counts), applied and deleted.
        ``acked_ids`` moves the pipeline's group on each partition to that id and writes it as
        the group's commit frontier there, in the deployment's encoding (``config.encoding``:
        Java's housekeeper reads a ``java-kryo`` deployment's frontiers with its Kryo codec and
        skips the partition's frontier trim on a field it cannot decode). A batch of at
        most ``chunk`` fields commits in one script; a bigger one goes through the commit
        journal, ``chunk`` fields per script (:mod:`mqcore.commit_journal`; ``on_group`` is
        called after each applied group). A stage hash that is gone (evicted or expired)
        raises :class:`~mqcore.commit_journal.StageLostError` with nothing written.
        """
        run_id, topic, sink, group = writer
        if not group:
            raise InvalidArgumentError("a pipeline group is required to record acks")
        validate_name("group", group)
        if chunk < 1:
            raise InvalidArgumentError(f"chunk must be at least 1 field, not {chunk}")
        triples: list[Any] = []
        for index, field, amount in increments:
            if not 1 <= index <= len(outputs):
                raise InvalidArgumentError(f"output index {index} out of range")
            triples.extend((index, field, int(amount)))
        parts = sorted(acked_ids, key=int)
        ack_here = not self.config.keys.hash_tags  # one slot only without hash tags
        streams = [self.keys.partition(topic, int(p)) for p in parts] if ack_here else []
        frontiers = [self.keys.commit_frontier(topic, int(p)) for p in parts] if ack_here else []
        offsets = dict(end_offsets if end_offsets is not None else acked_ids)
        keys = [
            *self._rec_keys(pipeline, batch_id),
            self.keys.sink_marker(pipeline),
            self.keys.commit_journal(pipeline),
            *streams,
            *frontiers,
        ]
        head: list[Any] = [
            sink,
            int(batch_id),
            run_id,
            now_ms or clock.now_ms(),
            int(records),
            json.dumps(offsets, sort_keys=True),
            group,
            len(streams),
        ]
        ends = [acked_ids[p] for p in parts] if ack_here else []
        journal = CommitJournal(self.client, self.keys, pipeline)
        fields = len(triples) // 3 + sum(n for _, n in stages)
        if fields <= chunk and len(stages) <= INLINE_STAGES:
            stage_keys = [key for key, _ in stages]
            inline_keys = [*keys, *outputs, *stage_keys]
            mode = self.config.frontier_mode
            inline_args = [*head, len(outputs), len(stages), pipeline, topic, 0, mode, *ends]
            inline_args += triples
            done = journal.inline(int(batch_id), inline_keys, inline_args, stage_keys, on_group)
        else:
            done = journal.commit(
                sink=sink,
                batch=int(batch_id),
                stages=[*stages, *journal.stage_triples(run_id, int(batch_id), triples, chunk)],
                outputs=outputs,
                final_keys=keys,
                final_args=[*head, 0, 0, pipeline, topic, 1, self.config.frontier_mode, *ends],
                chunk=chunk,
                on_group=on_group,
            )
        if not ack_here:
            self.set_group_position(topic, group, acked_ids)
        if done:
            self.trim(pipeline)
        return done

    def set_group_position(self, topic: str, group: str, acked_ids: Mapping[str, str]) -> None:
        """Move ``group`` to the given ids and write them as its commit frontier, in the
        deployment's encoding (idempotent; used on Redis Cluster after commit)."""
        for part, entry_id in acked_ids.items():
            if entry_id == "0-0":
                continue
            call_script(
                self.client,
                "set_group_position",
                [
                    self.keys.partition(topic, int(part)),
                    self.keys.commit_frontier(topic, int(part)),
                ],
                [group, entry_id, self.config.frontier_mode],
            )

    def record_failed(
        self,
        pipeline: str,
        batch_id: int,
        *,
        run_id: str,
        reason: str,
        now_ms: int | None = None,
    ) -> bool:
        """Mark a batch failed with a reason (ignored when it completed already)."""
        reason = " ".join(str(reason).split())[:500] or "unknown error"
        args: list[Any] = [int(batch_id), run_id, now_ms or clock.now_ms(), reason, pipeline]
        reply = call_script(
            self.client, "checkpoint_fail", self._rec_keys(pipeline, batch_id), args
        )
        return bool(reply)

    def record_progress(
        self,
        pipeline: str,
        batch_id: int,
        *,
        durations: Mapping[str, int],
        trigger_at_ms: int,
    ) -> bool:
        """Add the listener's duration breakdown to an existing record (never creates one)."""
        total = int(durations.get("triggerExecution", sum(durations.values())))
        reply = call_script(
            self.client,
            "checkpoint_progress",
            [self.keys.checkpoint(pipeline, batch_id)],
            [json.dumps(dict(durations), sort_keys=True), int(trigger_at_ms), total],
        )
        return bool(reply)

    def trim(self, pipeline: str) -> int:
        """Drop the oldest records beyond the retention cap (bounded work per call)."""
        index = self.keys.checkpoint_index(pipeline)
        size = int(self.client.zcard(index))
        excess = min(size - self.retained, _TRIM_STEP)
        if excess <= 0:
            return 0
        ids = [decode_text(m) for m in self.client.zrange(index, 0, excess - 1)]
        pipe = self.client.pipeline(transaction=False)
        for member in ids:
            pipe.delete(self.keys.checkpoint(pipeline, int(member)))
        pipe.zrem(index, *ids)
        pipe.execute()
        return len(ids)

    # --- reads --------------------------------------------------------------
    def committed_batch(self, pipeline: str, sink: str) -> int | None:
        raw = self.client.hget(self.keys.sink_marker(pipeline), sink)
        return int(raw) if raw is not None else None

    def pipelines(self) -> list[str]:
        return set_members(self.client, self.keys.pipelines())

    def summary(self, pipeline: str) -> dict[str, Any] | None:
        """Counters, latest ids and the last completed end offsets (:func:`pipeline_summary`
        as a dict); None when unknown."""
        validate_name("pipeline", pipeline)
        raw = self.client.hgetall(self.keys.checkpoint_meta(pipeline))
        summary = pipeline_summary(pipeline, raw)
        return msgspec.structs.asdict(summary) if summary is not None else None

    def summaries(self) -> list[dict[str, Any]]:
        """One summary per pipeline that ever wrote a checkpoint, sorted by name."""
        names = self.pipelines()
        out = []
        for name in names:
            summary = self.summary(name)
            if summary is not None:
                out.append(summary)
        return out

    def get(self, pipeline: str, batch_id: int) -> dict[str, Any] | None:
        raw = self.client.hgetall(self.keys.checkpoint(pipeline, batch_id))
        return self._record(raw) if raw else None

    def history(
        self, pipeline: str, limit: int = 20, before: int | None = None
    ) -> list[dict[str, Any]]:
        """Records newest first; ``before`` pages to batch ids strictly below it."""
        validate_name("pipeline", pipeline)
        limit = max(1, min(int(limit), 500))
        top: str = "+inf" if before is None else f"({int(before)}"
        ids = self.client.zrevrangebyscore(
            self.keys.checkpoint_index(pipeline), top, "-inf", start=0, num=limit
        )
        pipe = self.client.pipeline(transaction=False)
        for member in ids:
            pipe.hgetall(self.keys.checkpoint(pipeline, int(decode_text(member))))
        return [self._record(raw) for raw in pipe.execute() if raw]

    @staticmethod
    def _record(raw: Mapping[Any, Any]) -> dict[str, Any]:
        data: dict[str, Any] = _decode(raw)
        _ints(data, _INT_FIELDS)
        _json_field(data, "durations", {})
        _json_field(data, "end_offsets", {})
        _json_field(data, "start_offsets", {})
        data["sink_committed"] = data.get("sink_committed") == "1"
        data["restored"] = data.get("restored") == "1"
        data.setdefault("status", CheckpointStatus.IN_PROGRESS.value)
        data.setdefault("failure_reason", "")
        return data
