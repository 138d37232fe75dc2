"""One collector pass over a cluster.

:func:`collect_cluster` is the service the Celery task and ``manage.py collect``
call: claim the (cluster, slot) so that at most one run stores a pass per
collection interval, fetch the admin snapshot and pipeline checkpoints, evaluate
statuses (:mod:`dashboard.status`), diff leases and the rest into the incident
timeline (:mod:`dashboard.collectors.incidents`), evaluate
alerts (:mod:`dashboard.alerts`) and write everything in one transaction
(:mod:`dashboard.store`). The series points go to the store in parts as soon as
each is known (the minute's partition sample with the snapshot, the topic and group
points with the statuses): the store appends them while the pass evaluates, diffs and
encodes the rest, and the pass reads their replies before its transaction. Any failure is
recorded in collector health for that cluster only; the caller moves on to the next
cluster.
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from dashboard.alerts import RULES, AlertTransition, alert_conditions, alert_transition
from dashboard.clusters import console_store, java_retention, retention_policy
from dashboard.collectors.incidents import collector_failure_event, incident_diff
from dashboard.collectors.leases import lease_diff
from dashboard.collectors.memory import MemoryPass, memory_mark, memory_pass
from dashboard.collectors.notify import alert_events
from dashboard.collectors.pipelines import pipeline_groups_mark
from dashboard.collectors.retention_risk import retention_risk_mark
from dashboard.collectors.series import (
    MEMORY_METRIC,
    PARTITION_SAMPLE_MS,
    partition_points,
    series_points,
    tier_points,
)
from dashboard.collectors.sources import (
    BacklogCounter,
    CheckpointCollector,
    JavaProbe,
    RedisHealthProbe,
    SnapshotCollector,
    TopicMemoryProbe,
)
from dashboard.collectors.thresholds import alert_thresholds, status_thresholds
from dashboard.status import snapshot_enrich
from dashboard.store import ConsoleStore, tiers
from dashboard.store.console import PassPoints
from mqcore import clock
from mqcore.config import redact_urls
from mqcore.errors import MQError
from mqcore.snapshot import gc_paused

__all__ = ["PassResult", "collect_cluster"]

log = logging.getLogger(__name__)


@dataclass
class PassResult:
    """What one pass did: whether it stored, how long it took, the snapshot, the alert events."""

    cluster: str
    stored: bool  # False when another run already owns this slot or the pass failed
    elapsed_ms: float
    snapshot: dict[str, Any] | None = None
    error: str | None = None
    skipped_reason: str = ""
    events: list[dict[str, Any]] = field(default_factory=list)  # alert opens/closes to notify
    alerts_open: int | None = None  # alerts open on the cluster after this pass (None: unknown)


def _restart_check(
    state: Mapping[str, Any], snap: Mapping[str, Any], health: dict[str, Any], now_ms: int
) -> dict[str, Any] | None:
    """Redis restarted without persistence (run id changed, known groups gone): report it in
    ``health`` for a while, never recreate the groups; return the state to keep."""
    groups = sorted(
        f"{t['topic']}/{g['group']}"
        for t in snap.get("topics") or []
        for g in t.get("groups") or []
    )
    known = state.get("groups") or []
    old_run = state.get("run_id")
    restart = health.get("redis_restart")
    new_run = snap.get("redis_run_id") or ""
    if old_run and new_run and old_run != new_run:
        missing = sorted(set(known) - set(groups))
        health["restarted_at_ms"] = now_ms
        if missing:
            restart = {"at_ms": now_ms, "run_id": new_run, "missing_groups": missing}
    if restart and now_ms - int(restart["at_ms"]) > int(settings.ALERT_RESTART_HOLD_S) * 1000:
        restart = None
    health["redis_restart"] = restart
    return {"groups": groups, "run_id": new_run}


def _events(
    store: ConsoleStore, cluster: str, transition: AlertTransition, now_ms: int
) -> list[dict[str, Any]]:
    """The alert opens/closes to notify, without those a silence or acknowledgement mutes."""
    changed = [str(a["id"]) for a in (*transition.opened, *transition.resolved)]
    mutes = store.mutes_get(cluster, changed) if changed else {}
    return alert_events(transition.opened, transition.resolved, mutes=mutes, now_ms=now_ms)


def _memory(
    cluster: str, store: ConsoleStore, snap: dict[str, Any], state: Mapping[str, Any], now_ms: int
) -> MemoryPass:
    """This minute's share of the per-topic memory samples (dashboard.collectors.memory)."""
    since = now_ms - int(settings.MEMORY_GROWTH_WINDOW_S) * 1000
    probe = TopicMemoryProbe(cluster, int(settings.MEMORY_PROBE_SAMPLES))
    done = memory_pass(
        snap,
        state.get("memory") or {},
        int(state.get("memory_cursor") or 0),
        fetch=probe.fetch,
        history=lambda names: store.series_many(cluster, MEMORY_METRIC, names, since_ms=since),
        now_ms=now_ms,
        budget=max(1, int(settings.MEMORY_PROBE_STREAMS)),
    )
    if done.errors:
        log.info("collector %s: memory probe failed on %s", cluster, ", ".join(done.errors[:5]))
    return done


@gc_paused()  # see mqcore.snapshot.gc_paused: a third of the pass otherwise
def collect_cluster(
    cluster: str,
    *,
    token: str | None = None,
    store: ConsoleStore | None = None,
    claim: bool = True,
    gather_when_claimed: bool = False,
) -> PassResult:
    """One pass over ``cluster``; never raises for MQ-side failures (they land in health).

    ``token`` identifies this run (the Celery task id): a re-delivered task may
    redo a slot it claimed, any other run skips it - or, with
    ``gather_when_claimed``, gathers and returns the snapshot without storing it.
    """
    store = store or console_store()
    started = time.perf_counter()
    now_ms = clock.now_ms()
    interval = max(1, int(settings.COLLECT_INTERVAL_S))
    slot = now_ms // 1000 // interval
    write = True
    if claim and not store.slot_claim(cluster, slot, token or uuid.uuid4().hex, interval * 3):
        skipped = f"slot {slot} already collected by another run"
        if not gather_when_claimed:
            return PassResult(cluster, stored=False, elapsed_ms=0.0, skipped_reason=skipped)
        write = False
    prev = store.state_get(cluster)
    state: dict[str, Any] = prev["state"]
    health: dict[str, Any] = dict(prev["health"])
    health.update(runs=int(health.get("runs") or 0) + 1, last_run_ms=now_ms)
    try:
        snap = SnapshotCollector(cluster).fetch_dict()
        pipelines = CheckpointCollector(cluster).fetch()
    except Exception as exc:
        elapsed = (time.perf_counter() - started) * 1000
        error = redact_urls(f"{type(exc).__name__}: {exc}")  # shown on pages
        log.warning("collector %s failed: %s", cluster, error)
        health.update(
            ok=False,
            error=error[:500],
            duration_ms=round(elapsed, 1),
            errors=int(health.get("errors") or 0) + 1,
            consecutive_errors=int(health.get("consecutive_errors") or 0) + 1,
        )
        transition = alert_transition(
            prev["alerts"],
            state.get("alert_pending") or {},
            alert_conditions(None, health, alert_thresholds()),
            cluster=cluster,
            now_ms=now_ms,
            for_ms={},
            evaluated_rules={"collector", "redis_restart"},
        )
        state["alert_pending"] = transition.pending
        failed = collector_failure_event(error, now_ms, int(health["consecutive_errors"]))
        if write:
            store.alerts_write(
                cluster,
                transition.open,
                transition.resolved,
                state,
                incidents=[failed] if failed else [],
                written_ms=now_ms,
            )
            store.health_write(cluster, health)
        return PassResult(
            cluster,
            stored=False,
            elapsed_ms=elapsed,
            error=error,
            events=_events(store, cluster, transition, now_ms),
            alerts_open=len(transition.open),
        )
    minute = now_ms // PARTITION_SAMPLE_MS
    sampled = state.get("partition_sample") != minute
    # the tiers that get every pass's points; the coarse ones roll up the buckets that closed
    every_pass, buckets, rollups = tier_points([], state.get("buckets") or {}, now_ms, tiers())
    sender = (
        store.points_sender(cluster, now_ms, every_pass=list(every_pass), rollups=rollups)
        if write
        else None
    )
    try:
        if sender is not None and sampled:
            # the minute's partition sample (most series of a big deployment) goes first:
            # the store appends it while the pass evaluates statuses
            sender.send(partition_points(snap))
        snap["pipelines"] = pipelines or snap.get("pipelines") or []
        snap["taken_at_ms"] = snap.get("taken_at_ms") or now_ms
        pipeline_groups_mark(
            snap,
            snap["pipelines"],
            now_ms=int(snap["taken_at_ms"]),
            max_age_ms=alert_thresholds().checkpoint_age_ms,
        )
        snap, windows = snapshot_enrich(
            snap,
            state,
            cluster=cluster,
            defaults=status_thresholds(),
            per_topic=settings.STATUS_TOPIC_THRESHOLDS,
            dlq_window_ms=int(settings.DLQ_GROWTH_WINDOW_S) * 1000,
        )
        retention_risk_mark(
            snap, retention_policy(cluster), java_retention(cluster), BacklogCounter(cluster)
        )
        new_state: dict[str, Any] = {**state, **windows, "buckets": buckets}
        new_state.update(_restart_check(state, snap, health, now_ms) or {})
        if sender is not None:
            sender.send(series_points(snap))
        if sampled:
            new_state["partition_sample"] = minute
            names = [str(t.get("topic")) for t in snap.get("topics") or []]
            try:  # once a minute: does a Java service write Kryo data here? how is Redis?
                health["java"] = JavaProbe(cluster).fetch(names)
                health["redis"] = RedisHealthProbe(cluster).fetch()
            except MQError as exc:
                log.info("collector %s: Java or Redis health probe failed: %s", cluster, exc)
            memory = _memory(cluster, store, snap, state, now_ms)
            if sender is not None:
                sender.send(memory.points)
            new_state.update(memory=memory.state, memory_cursor=memory.cursor)
        memory_mark(snap, new_state.get("memory") or {})
        return _finish(
            cluster, store, snap, prev, state, new_state, health, sender, rollups,
            started=started, now_ms=now_ms, interval=interval, slot=slot, claim=claim,
        )  # fmt: skip
    finally:
        if sender is not None:
            with contextlib.suppress(Exception):  # the pass failed before pass_write read it
                sender.lengths()


def _finish(
    cluster: str,
    store: ConsoleStore,
    snap: dict[str, Any],
    prev: Mapping[str, Any],
    state: Mapping[str, Any],
    new_state: dict[str, Any],
    health: dict[str, Any],
    sender: PassPoints | None,
    rollups: dict[str, int],
    *,
    started: float,
    now_ms: int,
    interval: int,
    slot: int,
    claim: bool,
) -> PassResult:
    """The rest of a pass once its points are sent: lease and incident diffs, health,
    alerts, the store write (nothing stored without ``sender``: another run's slot)."""
    lease_changes, lease_state = lease_diff(prev["lease_state"], snap, now_ms)
    restart = health.get("redis_restart") or {}
    incidents, new_state["incidents"] = incident_diff(
        state.get("incidents"),
        snap,
        lease_changes,
        now_ms=now_ms,
        previous_run_id=state.get("run_id"),
        last_success_ms=prev["health"].get("last_success_ms"),
        interval_ms=interval * 1000,
        dlq_burst=int(settings.INCIDENT_DLQ_BURST),
        missing_groups=(restart.get("missing_groups") or [])
        if restart.get("at_ms") == now_ms
        else [],
    )
    elapsed = (time.perf_counter() - started) * 1000
    health.update(
        ok=True,
        error=None,
        duration_ms=round(elapsed, 1),
        last_success_ms=now_ms,
        consecutive_errors=0,
        redis_run_id=snap.get("redis_run_id") or "",
        topics=len(snap.get("topics") or []),
        partitions=sum(int(t.get("partitions") or 0) for t in snap.get("topics") or []),
        commands=snap.get("commands") or 0,
        snapshot_ms=round(float(snap.get("elapsed_ms") or 0.0), 1),
    )
    transition = alert_transition(
        prev["alerts"],
        state.get("alert_pending") or {},
        alert_conditions(snap, health, alert_thresholds()),
        cluster=cluster,
        now_ms=now_ms,
        for_ms={"status": alert_thresholds().status_for_ms},
        evaluated_rules=set(RULES),
    )
    new_state["alert_pending"] = transition.pending
    snap["elapsed_ms"] = round(elapsed, 1)
    if sender is None:
        return PassResult(
            cluster,
            stored=False,
            elapsed_ms=(time.perf_counter() - started) * 1000,
            snapshot=snap,
            skipped_reason=f"slot {slot} already collected by another run",
        )
    store.pass_write(
        cluster,
        now_ms=now_ms,
        snapshot=snap,
        state=new_state,
        lease_state=lease_state,
        incidents=incidents,
        points=sender.points,
        health=health,
        alerts_open=transition.open,
        alerts_resolved=transition.resolved,
        slot=slot if claim else None,
        rollups=rollups,
        appended=sender.lengths,
    )
    return PassResult(
        cluster,
        stored=True,
        elapsed_ms=(time.perf_counter() - started) * 1000,
        snapshot=snap,
        events=_events(store, cluster, transition, now_ms),
        alerts_open=len(transition.open),
    )
