"""The derive stage of a collector pass: what the pass stores, from what it read and the
previous pass's state. Nothing here does I/O: the series points are handed to the pass's
sender as they are derived (the store appends them while the rest is derived; the minute's
partition sample, :func:`partition_points`, is handed over by the pass before this stage).

:func:`derive_pass` is the stage, in this order, the modules it calls last:

- :func:`derive_snapshot`: the stored snapshot and the next collector state: each group's
  pipeline mark (:func:`pipeline_marks`), statuses and status windows (:mod:`dashboard.status`),
  the retention risks the read end judged, the topics' memory (:func:`memory_pass`);
- the topic and group points (:func:`series_points`) and the memory samples, to the sender;
- :func:`derive_outcome`: the master change the read end saw, made and held
  (:func:`master_change_step`, :func:`apply_cause`), collector health, then the alert
  transition (:mod:`dashboard.alerts`), lease and incident diffs (:mod:`.incidents`);
- or :func:`derive_failure` for a pass whose read failed: health, the collector alerts and
  the first failure's incident.

Pipeline groups (:func:`pipeline_marks`): the (topic, group) pairs a pipeline's sink moves
(it commits each batch with its group's position, and every checkpoint summary names that
``topic`` and ``group``). Such a group has no consumers by design and holds leases only while
its pipeline runs (:mod:`mqcore.lease_keeper`); the console recognises it from these records
(never from its name), shows its checkpoint health instead of "unowned" partitions and raises
no ownership alarm for it: each mark is set on its group (``group.pipeline``) before statuses.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec
from msgspec import UNSET

from dashboard.alerts import RULES, AlertTransition, pass_alerts
from dashboard.collectors.context import Outcome, PassContext, Previous, Sender
from dashboard.collectors.failover import ChangeSeen
from dashboard.collectors.incidents import (
    collector_failure_event,
    incident_diff,
    lease_diff,
    master_change_event,
)
from dashboard.collectors.read import Points, Reading
from dashboard.collectors.series import (
    MEMORY_METRIC,
    PARTITION_METRIC,
    PARTITION_PRODUCED_METRIC,
    PARTITION_SAMPLE_MS,
)
from dashboard.status import snapshot_enrich
from mqcore.admin.probes import MinuteProbe
from mqcore.models import (
    ClusterSnapshot,
    MasterChange,
    PipelineMark,
    PipelineSummary,
    Redelivered,
    Status,
    TopicMemory,
    TopicSnapshot,
)

__all__ = [
    "PIPELINE_HEALTH",
    "MemoryPass",
    "apply_cause",
    "derive_failure",
    "derive_outcome",
    "derive_pass",
    "derive_snapshot",
    "master_change_step",
    "memory_of",
    "memory_pass",
    "partition_points",
    "partition_produced",
    "pipeline_health",
    "pipeline_marks",
    "series_points",
]


def derive_pass(
    reading: Reading,
    ctx: PassContext,
    buckets: Mapping[str, int],
    points: Sender | None,
    started: float,
) -> Outcome:
    """What one pass stores (``buckets``: the last roll-up bucket per coarse tier, for the
    next state; ``points``: the sender of the pass's series points, None when nothing is
    written; ``started``: the pass's ``perf_counter`` start, for its duration)."""
    snap = reading.snapshot
    if snap is None:
        return derive_failure(reading, ctx, (time.perf_counter() - started) * 1000)
    snap, state, memory_points = derive_snapshot(reading, ctx, buckets)
    if points is not None:
        points.send(series_points(snap))
        points.send(memory_points)
    return derive_outcome(snap, state, reading, ctx, (time.perf_counter() - started) * 1000)


def memory_of(state: Mapping[str, Any], topic: str) -> TopicMemory | None:
    """A topic's latest memory for the snapshot (``topic.memory``), None before its first
    sample."""
    mem = state.get(topic)
    try:
        return msgspec.convert(mem, TopicMemory) if mem is not None else None
    except msgspec.ValidationError:  # state of an older format: until its next sample
        return None


def _health(previous: Previous, now_ms: int) -> dict[str, Any]:
    health = dict(previous["health"])
    health.update(runs=int(health.get("runs") or 0) + 1, last_run_ms=now_ms)
    return health


def derive_snapshot(
    reading: Reading, ctx: PassContext, buckets: Mapping[str, int]
) -> tuple[ClusterSnapshot, dict[str, Any], list[tuple[str, str, float]]]:
    """The stored snapshot (the read one, which the pass owns, with what is derived set on
    its topics and groups), the next collector state (``buckets``: the roll-up buckets) and
    the memory points of a sampled pass."""
    cluster, previous, rules, now_ms = ctx.cluster, ctx.previous, ctx.rules, ctx.now_ms
    snap = reading.snapshot
    assert snap is not None  # a failed read is derive_failure's
    state: Mapping[str, Any] = previous["state"]
    marks = pipeline_marks(
        snap.pipelines, now_ms=snap.taken_at_ms, max_age_ms=rules.alerts.checkpoint_age_ms
    )
    new_state: dict[str, Any] = dict(state)
    memory_points: list[tuple[str, str, float]] = []
    if reading.probe is not None:
        measured = memory_pass(
            snap, state.get("memory") or {}, reading.probe, reading.history, now_ms=now_ms
        )
        memory_points = measured.points
        sample = now_ms // PARTITION_SAMPLE_MS
        new_state.update(
            memory=measured.state, memory_cursor=measured.cursor, partition_sample=sample
        )
    for topic in snap.topics:  # before statuses: a pipeline group is alive
        for group in topic.groups:
            mark = marks.get((topic.topic, group.group))
            if mark is not None:
                group.pipeline = mark
    snap, windows = snapshot_enrich(
        snap,
        state,
        cluster=cluster,
        defaults=rules.status,
        per_topic=rules.per_topic,
        dlq_window_ms=rules.dlq_window_ms,
    )
    memory: Mapping[str, Any] = new_state.get("memory") or {}
    for topic in snap.topics:
        name = topic.topic
        for group in topic.groups:
            group.retention_risk = reading.risks.get((name, group.group), UNSET)
        topic.memory = memory_of(memory, name)
    new_state.update(windows, buckets=dict(buckets))
    return snap, new_state, memory_points


def derive_outcome(
    snap: ClusterSnapshot,
    state: dict[str, Any],
    reading: Reading,
    ctx: PassContext,
    elapsed_ms: float,
) -> Outcome:
    """The rest of a successful pass (``snap`` and ``state`` from :func:`derive_snapshot`):
    lease and incident diffs, health, alerts."""
    previous, rules, now_ms = ctx.previous, ctx.rules, ctx.now_ms
    old: Mapping[str, Any] = previous["state"]
    held, keep = master_change_step(
        snap, old, reading.change, now_ms=now_ms, hold_ms=rules.restart_hold_ms
    )
    if held is not None:
        apply_cause(snap, held)
    state.update(keep)
    health = _health(previous, now_ms)
    if reading.java is not None:
        health["java"] = reading.java
    if reading.redis is not None:
        health["redis"] = reading.redis
    state.update(_restart_check(old, snap, health, now_ms, rules.restart_hold_ms))
    topics = snap.topics
    health.update(
        ok=True,
        error=None,
        duration_ms=round(elapsed_ms, 1),
        last_success_ms=now_ms,
        consecutive_errors=0,
        redis_run_id=snap.redis_run_id,
        topics=len(topics),
        partitions=sum(t.partitions for t in topics),
        commands=snap.commands,
        snapshot_ms=round(snap.elapsed_ms, 1),
    )
    health.update(_replication_health(snap))
    transition = _alerts(ctx, state, snap, health, {"status": rules.alerts.status_for_ms}, RULES)
    lease_changes, lease_state = lease_diff(previous["lease_state"], snap, now_ms)
    restart = health.get("redis_restart") or {}
    change = snap.master_change if isinstance(snap.master_change, MasterChange) else None
    changed_now = change is not None and change.at_ms == now_ms
    incidents, state["incidents"] = incident_diff(
        old.get("incidents"),
        snap,
        lease_changes,
        now_ms=now_ms,
        # a new master has a new run id: the change's event says so, not a restart's
        previous_run_id=None if changed_now else old.get("run_id"),
        last_success_ms=previous["health"].get("last_success_ms"),
        interval_ms=rules.interval_ms,
        dlq_burst=rules.dlq_burst,
        dlq_growth=rules.alerts.dlq_growth,
        missing_groups=(restart.get("missing_groups") or [])
        if restart.get("at_ms") == now_ms
        else [],
    )
    if change is not None and changed_now:
        incidents.append(master_change_event(change))
    snap.elapsed_ms = round(elapsed_ms, 1)
    return Outcome(
        snap, state, lease_state, incidents, health, transition, None, _changed(transition)
    )


def _replication_health(snap: ClusterSnapshot) -> dict[str, Any]:
    """The replication facts and the held master change, for the collectors page."""
    repl, change, replica = snap.replication, snap.master_change, snap.replica
    return {
        "replication": msgspec.to_builtins(repl) if repl else None,
        "master_change": msgspec.to_builtins(change) if change else None,
        "replica": msgspec.to_builtins(replica) if replica else None,
    }


def derive_failure(reading: Reading, ctx: PassContext, elapsed_ms: float) -> Outcome:
    """A pass whose read failed: health, the alerts a failed pass can tell (collector,
    restart), the incident of the first failure of a run."""
    previous, now_ms = ctx.previous, ctx.now_ms
    error = str(reading.error)
    health = _health(previous, now_ms)
    health.update(
        ok=False,
        error=error[:500],
        duration_ms=round(elapsed_ms, 1),
        errors=int(health.get("errors") or 0) + 1,
        consecutive_errors=int(health.get("consecutive_errors") or 0) + 1,
    )
    state = dict(previous["state"])
    transition = _alerts(ctx, state, None, health, {}, ("collector", "redis_restart"))
    failed = collector_failure_event(error, now_ms, int(health["consecutive_errors"]))
    incidents = [failed] if failed else []
    return Outcome(None, state, None, incidents, health, transition, error, _changed(transition))


def _alerts(
    ctx: PassContext,
    state: dict[str, Any],
    snap: ClusterSnapshot | None,
    health: Mapping[str, Any],
    for_ms: Mapping[str, int],
    evaluated: Iterable[str],
) -> AlertTransition:
    """The alerts of the rules ``evaluated`` opened and resolved from the conditions that
    hold (``snap`` None: a failed pass); ``state["alert_pending"]`` moves on with them."""
    transition = pass_alerts(
        ctx.previous["alerts"],
        state.get("alert_pending") or {},
        snap,
        health,
        ctx.rules.alerts,
        cluster=ctx.cluster,
        now_ms=ctx.now_ms,
        for_ms=for_ms,
        evaluated_rules=set(evaluated),
    )
    state["alert_pending"] = transition.pending
    return transition


def _changed(transition: AlertTransition) -> list[str]:
    return [str(a["id"]) for a in (*transition.opened, *transition.resolved)]


def _restart_check(
    state: Mapping[str, Any],
    snap: ClusterSnapshot,
    health: dict[str, Any],
    now_ms: int,
    hold_ms: int,
) -> dict[str, Any]:
    """Redis restarted without persistence (run id changed, known groups gone): report it in
    ``health`` for a while, never recreate the groups; return the state to keep."""
    groups = sorted(f"{t.topic}/{g.group}" for t in snap.topics for g in t.groups)
    known = state.get("groups") or []
    old_run = state.get("run_id")
    restart = health.get("redis_restart")
    new_run = snap.redis_run_id
    if old_run and new_run and old_run != new_run:
        missing = sorted(set(known) - set(groups))
        health["restarted_at_ms"] = now_ms
        if missing:
            restart = {"at_ms": now_ms, "run_id": new_run, "missing_groups": missing}
    if restart and now_ms - int(restart["at_ms"]) > hold_ms:
        restart = None
    health["redis_restart"] = restart
    return {"groups": groups, "run_id": new_run}


# --- pipeline groups ----------------------------------------------------------------------------
# health of a pipeline, best first
PIPELINE_HEALTH = ("ok", "no_checkpoint", "stale", "failing")


def pipeline_health(
    summary: PipelineSummary, now_ms: int, max_age_ms: int
) -> tuple[str, str, int | None]:
    """``(health, reason, checkpoint_age_ms)`` of one checkpoint summary.

    ``failing``: the latest checkpoint failed (a failed batch newer than the last
    completed one); ``stale``: the last completed checkpoint is older than
    ``max_age_ms``; ``no_checkpoint``: none completed yet; ``ok`` otherwise.
    """
    last_at = summary.last_completed_at_ms
    age = max(0, now_ms - last_at) if last_at is not None else None
    completed_id, failed_id = summary.last_completed_id, summary.last_failed_id
    if failed_id is not None and (completed_id is None or failed_id > completed_id):
        why = summary.last_failure_reason or "no reason recorded"
        return "failing", f"batch {failed_id} failed: {why}", age
    if age is None:
        return "no_checkpoint", "no completed checkpoint yet", None
    if age > max_age_ms:
        return (
            "stale",
            f"last completed checkpoint {age // 1000} s ago (> {max_age_ms // 1000} s)",
            age,
        )
    return "ok", f"last completed checkpoint {age // 1000} s ago", age


def pipeline_marks(
    summaries: Iterable[PipelineSummary], *, now_ms: int, max_age_ms: int
) -> dict[tuple[str, str], PipelineMark]:
    """(topic, group) -> the mark of the pipeline that moves that group.

    The mark: ``name``, ``last_checkpoint_ms`` (last completed), ``checkpoint_age_ms``,
    ``failed_checkpoints`` (the pipeline's count), ``last_failed_ms``, ``health``
    (:data:`PIPELINE_HEALTH`) and ``health_reason``. When several pipelines move the
    same group (a misconfiguration) the first by name wins and ``others`` lists the rest.
    """
    by_pair: dict[tuple[str, str], PipelineMark] = {}
    for summary in sorted(summaries, key=lambda s: s.pipeline):
        topic, group, name = summary.topic, summary.group, summary.pipeline
        if not topic or not group or not name:
            continue
        if (topic, group) in by_pair:
            by_pair[(topic, group)].others.append(name)
            continue
        health, reason, age = pipeline_health(summary, now_ms, max_age_ms)
        by_pair[(topic, group)] = PipelineMark(
            name=name,
            last_checkpoint_ms=summary.last_completed_at_ms,
            checkpoint_age_ms=age,
            failed_checkpoints=summary.failed,
            last_failed_ms=summary.last_failed_at_ms,
            health=health,
            health_reason=reason,
        )
    return by_pair


# --- series points ------------------------------------------------------------------------------
def series_points(snap: ClusterSnapshot) -> Iterator[tuple[str, str, float]]:
    """(metric, entity, value) of this pass for every topic and group series, as the store
    takes them (a quarter of a million triples at 50,000 partitions: never all held)."""
    for topic in snap.topics:
        if topic.error:
            continue
        name = topic.topic
        group_points: list[tuple[str, str, float]] = []
        produced: Any = None  # the most entries a group saw: its entries read plus its lag
        for group in topic.groups:
            entity = f"{name}/{group.group}"
            consumed: Any = 0  # None when a partition's entries-read is unknown
            for p in group.partitions:
                read = p.entries_read
                if read is None:
                    consumed = None
                    break
                consumed += read
            lag = group.lag
            if consumed is not None and lag is not None:
                seen = (lag or 0) + consumed
                if produced is None or seen > produced:
                    produced = seen
            for metric, value in (
                ("lag", lag),
                ("lag_ms", group.lag_ms),
                ("pending", group.pending),
                ("consumed_total", consumed),
            ):
                if value is not None:
                    group_points.append((metric, entity, float(value)))
        for metric, value in (
            ("lag", topic.lag),
            ("lag_ms", topic.lag_ms),
            ("pending", topic.pending),
            ("oldest_pending_ms", topic.oldest_pending_ms),
            ("dlq_length", topic.dlq_length),
            ("length", topic.length),
            ("retry_count", topic.retry.count),
            ("produced_total", topic.length if produced is None else produced),
        ):
            if value is not None:
                yield (metric, name, float(value))
        yield from group_points


def partition_points(snap: ClusterSnapshot) -> Iterator[tuple[str, str, float]]:
    """(``partition_lag``, "topic/group/partition", lag) of every partition with a known lag,
    and (``partition_produced_total``, "topic/partition", entries added) of every partition,
    as the store takes them."""
    for topic in snap.topics:
        if topic.error:
            continue
        name = topic.topic
        for group in topic.groups:
            prefix = f"{name}/{group.group}/"
            for p in group.partitions:
                lag = p.lag
                if lag is not None:
                    yield (PARTITION_METRIC, f"{prefix}{p.partition}", float(lag))
        for n, value in enumerate(partition_produced(topic)):
            if value is not None:
                yield (PARTITION_PRODUCED_METRIC, f"{name}/{n}", value)


def partition_produced(topic: TopicSnapshot) -> list[float | None]:
    """Entries ever added to each partition of one snapshot topic: the highest
    ``entries_read + lag`` of its groups with an exact count, else the partition length
    (a lower bound once retention trimmed it); None when neither is known."""
    lengths = topic.partition_lengths
    count = max(topic.partitions, len(lengths))
    out: list[float | None] = [
        float(lengths[p]) if p < len(lengths) and lengths[p] is not None else None
        for p in range(count)
    ]
    best: dict[int, float] = {}
    for group in topic.groups:
        for p in group.partitions:
            lag, read = p.lag, p.entries_read
            if lag is None or read is None:
                continue
            n = p.partition
            best[n] = max(best.get(n, 0.0), float(lag) + float(read))
    for n, value in best.items():
        if 0 <= n < count:
            out[n] = value
    return out


# --- master changes (seen by the read end: dashboard.collectors.failover) ----------------------
LISTED = 50  # redelivered entries kept for the page, all partitions together


def master_change_step(
    snap: ClusterSnapshot,
    state: Mapping[str, Any],
    seen: ChangeSeen | None,
    *,
    now_ms: int,
    hold_ms: int,
) -> tuple[MasterChange | None, dict[str, Any]]:
    """This pass's master change (the one the read end saw, or the last one still held
    for ``hold_ms``) and the state to keep (``replication``, ``master_change``)."""
    repl = snap.replication
    keep: dict[str, Any] = {}
    old = state.get("replication")
    change: MasterChange | None = None
    if repl is not UNSET and repl.role == "master":
        keep["replication"] = msgspec.to_builtins(repl)
        if seen is not None:
            listed: list[Redelivered] = []
            room = LISTED
            for item in seen.redelivered:
                if room <= 0:
                    break
                listed.append(msgspec.structs.replace(item, ids=item.ids[:room]))
                room -= len(listed[-1].ids) or 1
            change = MasterChange(
                at_ms=now_ms,
                reason=seen.reason,
                from_run_id=str(old.get("run_id") or "") if isinstance(old, Mapping) else "",
                to_run_id=repl.run_id,
                from_offset=int(old.get("offset") or 0) if isinstance(old, Mapping) else 0,
                to_offset=repl.offset,
                rewound=seen.rewound,
                redelivered=sum(r.count for r in seen.redelivered),
                redelivered_exact=all(r.exact for r in seen.redelivered),
                redelivered_entries=listed,
            )
    if change is None:
        held = state.get("master_change")
        if isinstance(held, Mapping) and now_ms - int(held.get("at_ms") or 0) <= hold_ms:
            try:
                change = msgspec.convert(held, MasterChange)
            except msgspec.ValidationError:  # state of an older format
                change = None
    keep["master_change"] = msgspec.to_builtins(change) if change is not None else None
    return change, keep


def apply_cause(snap: ClusterSnapshot, change: MasterChange) -> None:
    """The master change on the snapshot; the cause ``failover`` on the REWIND of every
    group it rewound (its reason says so, on the page and in the API)."""
    snap.master_change = change
    rewound = set(change.rewound)
    if not rewound:
        return
    for topic in snap.topics:
        for group in topic.groups:
            if group.status is not Status.REWIND or f"{topic.topic}/{group.group}" not in rewound:
                continue
            group.rewind_cause = "failover"
            group.status_reason = f"{group.status_reason} (cause: failover)"
            for part in group.partitions:
                if part.status is Status.REWIND:
                    part.status_reason = f"{part.status_reason} (cause: failover)"


# --- per-topic memory ---------------------------------------------------------------------------
# What a topic's partition streams take in Redis (``MEMORY USAGE``, once a minute for the next
# topics in turn within a budget of streams: mqcore.admin.probes.memory_pick), kept as the
# ``memory_bytes`` series and on the snapshot (``topic.memory``). The growth the
# ``memory_growth`` alert watches: the newest sample against the oldest of its window.


@dataclass
class MemoryPass:
    points: list[tuple[str, str, float]] = field(default_factory=list)
    state: dict[str, dict[str, Any]] = field(default_factory=dict)  # topic -> latest memory
    cursor: int = 0
    errors: list[str] = field(default_factory=list)


def memory_pass(
    snap: ClusterSnapshot,
    previous: Mapping[str, Any],
    probe: MinuteProbe,
    history: Mapping[str, Points],
    *,
    now_ms: int,
) -> MemoryPass:
    """The points and the new per-topic memory state (topics gone from the snapshot dropped)
    of the minute's memory probe, and the next cursor; ``history``: the memory series of the
    topics measured. Topics the probe did not measure (or all, when it failed) keep their
    last values."""
    names = {t.topic for t in snap.topics if not t.error}
    out = MemoryPass(
        state={k: dict(v) for k, v in previous.items() if k in names}, cursor=probe.cursor
    )
    if probe.memory_error is not None:
        out.errors.append(f"{len(probe.picked)} topics: {type(probe.memory_error).__name__}")
    for name, sizes in probe.memory.items():
        known = [s for s in sizes if s is not None]
        if not known:
            continue
        value = float(sum(known))
        points = [p for p in history.get(name) or [] if p[0] < now_ms]
        start_ms, start = points[0] if points else (now_ms, value)
        out.state[name] = {
            "bytes": value,
            "at_ms": now_ms,
            "from_bytes": start,
            "from_ms": int(start_ms),
            "partitions": list(sizes),
        }
        out.points.append((MEMORY_METRIC, name, value))
    return out
