"""Collectors: small classes with one ``fetch()`` each, and the pass over one cluster.

:func:`collect_cluster` is the service the Celery task and ``manage.py collect``
call: claim the (cluster, slot) (R17), fetch the admin snapshot and pipeline
checkpoints, evaluate statuses (:mod:`dashboard.status`), diff leases into the
timeline, evaluate alerts (:mod:`dashboard.alerts`) and write everything in one
transaction (:mod:`dashboard.store`). Any failure is recorded in collector
health for that cluster only; the caller moves on to the next cluster.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from dashboard import clusters
from dashboard.alerts import (
    RULES,
    AlertThresholds,
    alert_conditions,
    alert_transition,
    webhook_post,
)
from dashboard.status import Thresholds, snapshot_enrich
from dashboard.store import ConsoleStore, Tier, default_store, tiers
from mqcore.models import ClusterSnapshot
from mqcore.snapshot import gc_paused

__all__ = [
    "CheckpointCollector",
    "PassResult",
    "SnapshotCollector",
    "alert_notify",
    "collect_cluster",
    "lease_diff",
    "series_points",
    "tier_points",
]

log = logging.getLogger(__name__)

TOPIC_METRICS = (
    "lag",
    "lag_ms",
    "pending",
    "oldest_pending_ms",
    "dlq_length",
    "length",
    "retry_count",
    "produced_total",
)
GROUP_METRICS = ("lag", "lag_ms", "pending", "consumed_total")


class SnapshotCollector:
    """Topics, groups, partitions, leases, consumers, retry, DLQ of a cluster (mqcore.admin)."""

    def __init__(self, cluster: str, batch: int = 500) -> None:
        self.cluster = cluster
        self.batch = batch

    def fetch(self) -> ClusterSnapshot:
        return clusters.admin(self.cluster).snapshot(batch=self.batch)

    def fetch_dict(self) -> dict[str, Any]:
        """:meth:`fetch` as the plain dict the console stores (no dataclasses in between)."""
        return clusters.admin(self.cluster).snapshot_dict(batch=self.batch)


class CheckpointCollector:
    """Latest checkpoint summary per pipeline (mqcore.checkpoints), when pipelines exist."""

    def __init__(self, cluster: str) -> None:
        self.cluster = cluster

    def fetch(self) -> list[dict[str, Any]]:
        store = clusters.checkpoints(self.cluster)
        return [dict(s) for s in store.summaries()]


@dataclass
class PassResult:
    cluster: str
    stored: bool  # False when another run already owns this slot (R17) or the pass failed
    elapsed_ms: float
    snapshot: dict[str, Any] | None = None
    error: str | None = None
    skipped_reason: str = ""
    events: list[dict[str, Any]] = field(default_factory=list)  # alert opens/closes to notify


_FIELDS: dict[type, tuple[str, ...]] = {}


def plain(value: Any) -> Any:
    """``dataclasses.asdict`` for snapshot models, without its deep copies (5x faster)."""
    cls = type(value)
    if cls in (str, int, float, bool, type(None)):
        return value
    names = _FIELDS.get(cls)
    if names is None and dataclasses.is_dataclass(value):
        names = _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(value))
    if names is not None:
        return {name: plain(getattr(value, name)) for name in names}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, str):  # StrEnum members (lag exactness)
        return str(value)
    return value


def status_thresholds() -> Thresholds:
    samples = max(1, int(settings.STATUS_WINDOW_SAMPLES))
    stop_s = float(settings.STATUS_STOP_AFTER_S) or samples * int(settings.COLLECT_INTERVAL_S)
    return Thresholds(
        window_samples=samples,
        allowed_lag=int(settings.STATUS_ALLOWED_LAG),
        stop_after_ms=int(stop_s * 1000),
    )


def alert_thresholds() -> AlertThresholds:
    return AlertThresholds(
        status_for_ms=int(settings.ALERT_STATUS_FOR_S) * 1000,
        dlq_growth=int(settings.ALERT_DLQ_GROWTH),
        oldest_pending_ms=int(settings.ALERT_OLDEST_PENDING_S) * 1000,
        checkpoint_age_ms=int(settings.ALERT_CHECKPOINT_AGE_S) * 1000,
        collector_failures=int(settings.ALERT_COLLECTOR_FAILURES),
    )


def lease_diff(
    previous: Mapping[str, Any] | None, snap: Mapping[str, Any], now_ms: int
) -> tuple[dict[str, list[dict[str, Any]]], dict[str, Any]]:
    """Ownership changes since the previous pass, per topic (newest first), and the new state.

    State: "topic\\x1fgroup\\x1fpartition" -> [owner, epoch, expires_at_ms]. A lease
    that vanished before its TTL ran out was released; after it, it expired.
    The first pass ever only records the state.
    """
    state: dict[str, Any] = {}
    events: dict[str, list[dict[str, Any]]] = {}
    for topic in snap.get("topics") or []:
        if topic.get("error"):
            for key, value in (previous or {}).items():
                if key.split("\x1f", 1)[0] == topic["topic"]:
                    state[key] = value
            continue
        for lease in topic.get("leases") or []:
            key = f"{topic['topic']}\x1f{lease['group']}\x1f{lease['partition']}"
            ttl = lease.get("ttl_ms")
            state[key] = [lease.get("owner"), int(lease.get("epoch") or 0), now_ms + int(ttl or 0)]
    if previous is None:
        return events, state
    changed = []
    for key in set(previous) | set(state):
        old, new = previous.get(key), state.get(key)
        if old is not None and new is not None and old[0] == new[0] and old[1] == new[1]:
            continue  # same owner, same epoch: nothing happened
        changed.append(key)
    for key in sorted(changed):
        old_owner, old_epoch, old_expiry = previous.get(key) or [None, 0, 0]
        new_owner, new_epoch, _ = state.get(key) or [None, old_epoch, 0]
        topic, group, part = key.split("\x1f")
        event = None
        if old_owner is None and new_owner is not None:
            event = "acquired"
        elif old_owner is not None and new_owner is None:
            event = "expired" if now_ms >= int(old_expiry) else "released"
        elif old_owner != new_owner:
            event = "taken_over"
        elif new_owner is not None and new_epoch != old_epoch:
            event = "acquired"
        if event:
            events.setdefault(topic, []).append(
                {
                    "at_ms": now_ms,
                    "group": group,
                    "partition": int(part),
                    "event": event,
                    "owner": new_owner,
                    "previous_owner": old_owner,
                    "epoch": new_epoch,
                }
            )
    return events, {k: v for k, v in state.items() if v[0] is not None}


def series_points(snap: Mapping[str, Any]) -> list[tuple[str, str, float]]:
    """(metric, entity, value) of this pass for every topic and group series."""
    out: list[tuple[str, str, float]] = []
    for topic in snap.get("topics") or []:
        if topic.get("error"):
            continue
        name = topic["topic"]
        groups = topic.get("groups") or []
        produced = [
            (g.get("lag") or 0) + sum(int(p.get("entries_read") or 0) for p in g["partitions"])
            for g in groups
            if g.get("lag") is not None
            and all(p.get("entries_read") is not None for p in g["partitions"])
        ]
        retry = topic.get("retry") or {}
        values: dict[str, Any] = {
            "lag": topic.get("lag"),
            "lag_ms": topic.get("lag_ms"),
            "pending": topic.get("pending"),
            "oldest_pending_ms": topic.get("oldest_pending_ms"),
            "dlq_length": topic.get("dlq_length"),
            "length": topic.get("length"),
            "retry_count": retry.get("count"),
            "produced_total": max(produced) if produced else topic.get("length"),
        }
        out.extend((m, name, float(v)) for m, v in values.items() if v is not None)
        for group in groups:
            entity = f"{name}/{group['group']}"
            consumed = [p.get("entries_read") for p in group["partitions"]]
            gvalues = {
                "lag": group.get("lag"),
                "lag_ms": group.get("lag_ms"),
                "pending": group.get("pending"),
                "consumed_total": (
                    sum(int(c) for c in consumed) if all(c is not None for c in consumed) else None
                ),
            }
            out.extend((m, entity, float(v)) for m, v in gvalues.items() if v is not None)
    return out


def tier_points(
    triples: list[tuple[str, str, float]],
    buckets: Mapping[str, int],
    now_ms: int,
    all_tiers: Sequence[Tier],
) -> tuple[dict[str, list[tuple[str, str, float]]], dict[str, int], dict[str, int]]:
    """This pass's points, the new last bucket per coarse tier, and the buckets that closed.

    Raw gets every pass's points. A coarse tier's point for a bucket is rolled up
    from the raw points of that bucket when it closes (the first pass of a later
    bucket): the max of a gauge, the last value of a counter (see
    :func:`dashboard.store.rollup_value`). The first pass ever closes nothing.
    """
    points: dict[str, list[tuple[str, str, float]]] = {}
    new_buckets = dict(buckets)
    closed: dict[str, int] = {}
    for tier in all_tiers:
        if tier.bucket_s == 0:
            points[tier.name] = triples
            continue
        bucket = now_ms // 1000 // tier.bucket_s
        previous = new_buckets.get(tier.name)
        if previous != bucket:
            if previous is not None and previous < bucket:
                closed[tier.name] = int(previous)
            new_buckets[tier.name] = bucket
    return points, new_buckets, closed


def _restart_check(
    state: Mapping[str, Any], snap: Mapping[str, Any], health: dict[str, Any], now_ms: int
) -> dict[str, Any] | None:
    """R9: run id changed and known groups are gone -> report (never recreate)."""
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
    with gc_paused():  # see mqcore.snapshot.gc_paused: a third of the pass otherwise
        return _collect_cluster(
            cluster,
            token=token,
            store=store,
            claim=claim,
            gather_when_claimed=gather_when_claimed,
        )


def _collect_cluster(
    cluster: str,
    *,
    token: str | None,
    store: ConsoleStore | None,
    claim: bool,
    gather_when_claimed: bool,
) -> PassResult:
    store = store or default_store()
    started = time.perf_counter()
    now_ms = int(time.time() * 1000)
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
        error = f"{type(exc).__name__}: {exc}"
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
        if write:
            store.alerts_write(cluster, transition.open, transition.resolved, state)
            store.health_write(cluster, health)
        return PassResult(
            cluster,
            stored=False,
            elapsed_ms=elapsed,
            error=error,
            events=_events(transition.opened, transition.resolved),
        )
    snap["pipelines"] = pipelines or snap.get("pipelines") or []
    snap["taken_at_ms"] = snap.get("taken_at_ms") or now_ms
    th = status_thresholds()
    snap, windows = snapshot_enrich(
        snap,
        state,
        cluster=cluster,
        defaults=th,
        per_topic=settings.STATUS_TOPIC_THRESHOLDS,
        dlq_window_ms=int(settings.DLQ_GROWTH_WINDOW_S) * 1000,
    )
    new_state: dict[str, Any] = {**state, **windows}
    new_state.update(_restart_check(state, snap, health, now_ms) or {})
    events, lease_state = lease_diff(prev["lease_state"], snap, now_ms)
    points, new_state["buckets"], rollups = tier_points(
        series_points(snap), state.get("buckets") or {}, now_ms, tiers()
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
    if not write:
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
        lease_events={t: list(reversed(e)) for t, e in events.items()},
        points=points,
        health=health,
        alerts_open=transition.open,
        alerts_resolved=transition.resolved,
        slot=slot if claim else None,
        rollups=rollups,
    )
    return PassResult(
        cluster,
        stored=True,
        elapsed_ms=(time.perf_counter() - started) * 1000,
        snapshot=snap,
        events=_events(transition.opened, transition.resolved),
    )


def _events(opened: list[dict[str, Any]], resolved: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"event": "opened", "alert": a} for a in opened] + [
        {"event": "resolved", "alert": a} for a in resolved
    ]


def alert_notify(event: Mapping[str, Any]) -> bool:
    """Send one alert open/close to ALERT_WEBHOOK_URL (no-op when unset). True when delivered."""
    url = str(settings.ALERT_WEBHOOK_URL or "")
    if not url:
        return False
    return webhook_post(url, {"source": "opsdash", **event})
