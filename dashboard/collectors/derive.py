"""The derive stage of a collector pass: what the pass stores, from what it read and the
previous pass's state. Nothing here does I/O: the series points are handed to the pass's
sender as they are derived (the store appends them while the rest is derived). The
minute's partition sample (:func:`partition_points`) is handed over by the pass before
this stage, so that its appends run while statuses are evaluated.

:func:`derive_pass` is the stage, in this order:

- :func:`derive_snapshot`: the stored snapshot and the next collector state: each group's
  pipeline mark (:func:`pipeline_marks`), statuses and status windows (:mod:`dashboard.status`),
  the retention risks and topic memory the read end measured, the MQ Redis run id;
- the topic and group points (:func:`series_points`) and the memory samples, to the sender;
- :func:`derive_outcome`: the rest of a successful pass: lease and incident diffs
  (:mod:`.incidents`), collector health, the alert transition (:mod:`dashboard.alerts`);
- or :func:`derive_failure` for a pass whose read failed: health, the collector alerts and
  the first failure's incident.

Pipeline groups (:func:`pipeline_marks`): the (topic, group) pairs a pipeline's sink moves,
from its checkpoints. A pipeline's sink commits each batch together with the position of its
consumer group (:meth:`mqcore.checkpoints.CheckpointStore.record_committed`), and every
checkpoint summary names that ``topic`` and ``group``. Such a group has no consumers by
design, and holds leases only while its pipeline runs (so that Java's housekeeper counts it:
:mod:`mqcore.lease_keeper`); the console recognises it from these records (never from its
name), shows its checkpoint health instead of "unowned" partitions and raises no ownership
alarm for it. The pass sets each mark on its snapshot group (``group.pipeline``) before
statuses are evaluated.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import msgspec
from django.conf import settings
from msgspec import UNSET

from dashboard.alerts import (
    RULES,
    AlertThresholds,
    AlertTransition,
    pass_alerts,
)
from dashboard.collectors.failover import apply_cause, master_change_step
from dashboard.collectors.incidents import (
    collector_failure_event,
    incident_diff,
    lease_diff,
    master_change_event,
)
from dashboard.collectors.read import Reading
from dashboard.collectors.series import (
    PARTITION_METRIC,
    PARTITION_PRODUCED_METRIC,
    PARTITION_SAMPLE_MS,
)
from dashboard.status import Thresholds, snapshot_enrich
from mqcore.models import (
    ClusterSnapshot,
    MasterChange,
    PipelineMark,
    PipelineSummary,
    TopicMemory,
    TopicSnapshot,
)

__all__ = [
    "PIPELINE_HEALTH",
    "Outcome",
    "PassContext",
    "PassRules",
    "Previous",
    "derive_failure",
    "derive_outcome",
    "derive_pass",
    "derive_snapshot",
    "memory_of",
    "partition_points",
    "partition_produced",
    "pass_rules",
    "pipeline_health",
    "pipeline_marks",
    "series_points",
]

Previous = Mapping[str, Any]  # the store's state_get: state, lease_state, health, alerts


@dataclass(frozen=True, slots=True)
class PassRules:
    """The settings a pass derives with."""

    status: Thresholds
    alerts: AlertThresholds
    per_topic: Mapping[str, Mapping[str, Any]]
    dlq_window_ms: int
    interval_ms: int
    restart_hold_ms: int
    dlq_burst: int


def pass_rules() -> PassRules:
    """The status and alert thresholds and the other rules of a pass, from the settings."""
    samples = max(1, int(settings.STATUS_WINDOW_SAMPLES))
    interval_s = max(1, int(settings.COLLECT_INTERVAL_S))
    stop_s = float(settings.STATUS_STOP_AFTER_S) or samples * interval_s
    return PassRules(
        status=Thresholds(
            window_samples=samples,
            allowed_lag=int(settings.STATUS_ALLOWED_LAG),
            stop_after_ms=int(stop_s * 1000),
        ),
        alerts=AlertThresholds(
            status_for_ms=int(settings.ALERT_STATUS_FOR_S) * 1000,
            dlq_growth=int(settings.ALERT_DLQ_GROWTH),
            oldest_pending_ms=int(settings.ALERT_OLDEST_PENDING_S) * 1000,
            checkpoint_age_ms=int(settings.ALERT_CHECKPOINT_AGE_S) * 1000,
            collector_failures=int(settings.ALERT_COLLECTOR_FAILURES),
            memory_growth_bytes=int(settings.ALERT_MEMORY_GROWTH_MB) * 2**20,
            memory_growth_share=float(settings.ALERT_MEMORY_GROWTH_SHARE),
        ),
        per_topic=settings.STATUS_TOPIC_THRESHOLDS,
        dlq_window_ms=int(settings.DLQ_GROWTH_WINDOW_S) * 1000,
        interval_ms=interval_s * 1000,
        restart_hold_ms=int(settings.ALERT_RESTART_HOLD_S) * 1000,
        dlq_burst=int(settings.INCIDENT_DLQ_BURST),
    )


@dataclass(frozen=True, slots=True)
class PassContext:
    """What every derive step of one pass knows: the cluster, the previous pass's state (the
    store's ``state_get``), the rules, the pass's time."""

    cluster: str
    previous: Previous
    rules: PassRules
    now_ms: int


@dataclass
class Outcome:
    """What a pass stores besides its series points (``snapshot`` None: the read failed)."""

    snapshot: ClusterSnapshot | None
    state: dict[str, Any]
    lease_state: dict[str, Any] | None
    incidents: list[dict[str, Any]]
    health: dict[str, Any]
    transition: AlertTransition
    error: str | None = None
    changed: list[str] = field(default_factory=list)  # alert ids opened or resolved


class Sender(Protocol):
    """Where a pass's series points go as they are derived (the store's
    :class:`~dashboard.store.series.PassPoints`)."""

    def send(self, triples: Iterable[tuple[str, str, float]]) -> None: ...


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
    snap, state = derive_snapshot(reading, ctx, buckets)
    if points is not None:
        points.send(series_points(snap))
        if reading.memory is not None:
            points.send(reading.memory.points)
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
) -> tuple[ClusterSnapshot, dict[str, Any]]:
    """The stored snapshot (the read one, which the pass owns, with what is derived set on
    its topics and groups) and the next collector state (``buckets``: the roll-up buckets)."""
    cluster, previous, rules, now_ms = ctx.cluster, ctx.previous, ctx.rules, ctx.now_ms
    snap = reading.snapshot
    assert snap is not None  # a failed read is derive_failure's
    state: Mapping[str, Any] = previous["state"]
    marks = pipeline_marks(
        snap.pipelines,
        now_ms=snap.taken_at_ms,
        max_age_ms=rules.alerts.checkpoint_age_ms,
    )
    new_state: dict[str, Any] = dict(state)
    if reading.memory is not None:
        new_state.update(
            memory=reading.memory.state,
            memory_cursor=reading.memory.cursor,
            partition_sample=now_ms // PARTITION_SAMPLE_MS,
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
    new_state.update(_master_change(snap, state, reading, ctx))
    return snap, new_state


def _master_change(
    snap: ClusterSnapshot, state: Mapping[str, Any], reading: Reading, ctx: PassContext
) -> dict[str, Any]:
    """The master change of this pass (or the last one, held) on ``snap``, with the cause
    of the REWINDs it made (:mod:`.failover`); the state to keep."""
    change, keep = master_change_step(
        snap,
        state,
        reading.redelivered,
        now_ms=ctx.now_ms,
        hold_ms=ctx.rules.restart_hold_ms,
    )
    if change is not None:
        apply_cause(snap, change)
    return keep


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
