"""One collector pass over a cluster, as a pipeline: open -> read -> derive -> write.

:func:`collect_cluster` is the service the Celery task and ``manage.py collect`` call:

1. open (:meth:`ConsoleStore.pass_open`): claim the (cluster, slot), so that at most one
   run stores a pass per collection interval, and take the previous pass's state;
2. read (:func:`~dashboard.collectors.read.read_cluster`): the admin snapshot, the
   pipeline checkpoints, the once-a-minute probes, the backlogs the retention rules need;
3. derive (:mod:`dashboard.collectors.derive`, pure): statuses and the stored snapshot,
   then leases, incidents, health and alerts;
4. write (:meth:`ConsoleStore.pass_write`): everything in one MULTI/EXEC after the series
   points, and the silences of the alerts that changed.

The series points (:mod:`dashboard.collectors.series`) go to the write end as soon as each
part is derived: the store's writer thread appends them while the pass derives the rest
(the minute's partition sample right after the read, the topic and group points with the
statuses). A failed read is recorded in collector health for that cluster only; the caller
moves on to the next cluster.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from dashboard.alert_mutes import mute_applies
from dashboard.clusters import console_store
from dashboard.collectors.derive import (
    Outcome,
    PassContext,
    derive_failure,
    derive_outcome,
    derive_snapshot,
    pass_rules,
)
from dashboard.collectors.read import read_cluster
from dashboard.collectors.series import (
    MEMORY_METRIC,
    PARTITION_SAMPLE_MS,
    partition_points,
    series_points,
)
from dashboard.store import ConsoleStore
from mqcore import clock
from mqcore.models import ClusterSnapshot
from mqcore.snapshot import gc_paused

__all__ = ["PassResult", "alert_events", "collect_cluster"]


@dataclass
class PassResult:
    """What one pass did: whether it stored, how long it took, the snapshot, the alert events."""

    cluster: str
    stored: bool  # False when another run already owns this slot or the pass failed
    elapsed_ms: float
    snapshot: ClusterSnapshot | None = None
    error: str | None = None
    skipped_reason: str = ""
    events: list[dict[str, Any]] = field(default_factory=list)  # alert opens/closes to notify
    alerts_open: int | None = None  # alerts open on the cluster after this pass (None: unknown)


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
    opened = store.pass_open(
        cluster,
        now_ms=now_ms,
        claim=(slot, token or uuid.uuid4().hex, interval * 3) if claim else None,
        gather_when_claimed=gather_when_claimed,
    )
    skipped = f"slot {slot} already collected by another run"
    if opened is None:
        return PassResult(cluster, stored=False, elapsed_ms=0.0, skipped_reason=skipped)
    since = now_ms - int(settings.MEMORY_GROWTH_WINDOW_S) * 1000
    reading = read_cluster(
        cluster,
        opened.previous["state"],
        now_ms=now_ms,
        sampled=opened.previous["state"].get("partition_sample") != now_ms // PARTITION_SAMPLE_MS,
        history=lambda names: store.series_many(cluster, MEMORY_METRIC, names, since_ms=since),
    )
    ctx = PassContext(cluster, opened.previous, pass_rules(), now_ms)
    points = opened.points  # None: another run's slot, nothing is written
    try:
        if reading.snapshot is None:
            outcome = derive_failure(reading, ctx, (time.perf_counter() - started) * 1000)
        else:
            if points is not None and reading.sampled:
                points.send(partition_points(reading.snapshot))
            snap, state = derive_snapshot(reading, ctx, opened.buckets)
            if points is not None:
                points.send(series_points(snap))
                if reading.memory is not None:
                    points.send(reading.memory.points)
            elapsed_ms = (time.perf_counter() - started) * 1000
            outcome = derive_outcome(snap, state, reading, ctx, elapsed_ms)
        if points is None:
            return _result(cluster, outcome, started, now_ms, stored=False, skipped=skipped)
        mutes = store.pass_write(
            cluster,
            now_ms=now_ms,
            snapshot=outcome.snapshot,
            state=outcome.state,
            lease_state=outcome.lease_state,
            incidents=outcome.incidents,
            points=points.points,
            health=outcome.health,
            alerts_open=outcome.transition.open,
            alerts_resolved=outcome.transition.resolved,
            slot=slot if claim and outcome.snapshot is not None else None,
            rollups=opened.rollups if outcome.snapshot is not None else None,
            appended=points.lengths,
            mutes_of=outcome.changed,
        )
    finally:
        if points is not None:
            with contextlib.suppress(Exception):  # the pass failed before pass_write read it
                points.lengths()
    return _result(
        cluster, outcome, started, now_ms, stored=outcome.snapshot is not None, mutes=mutes
    )


def _result(
    cluster: str,
    outcome: Outcome,
    started: float,
    now_ms: int,
    *,
    stored: bool,
    skipped: str = "",
    mutes: dict[str, dict[str, Any]] | None = None,
) -> PassResult:
    """The pass's result; the alert opens/closes to notify, without those a silence or
    acknowledgement mutes (none when nothing was stored)."""
    transition = outcome.transition
    return PassResult(
        cluster,
        stored=stored,
        elapsed_ms=(time.perf_counter() - started) * 1000,
        snapshot=outcome.snapshot,
        error=outcome.error,
        skipped_reason="" if mutes is not None else skipped,
        events=alert_events(transition.opened, transition.resolved, mutes=mutes, now_ms=now_ms)
        if mutes is not None
        else [],
        alerts_open=len(transition.open) if mutes is not None else None,
    )


def alert_events(
    opened: list[dict[str, Any]],
    resolved: list[dict[str, Any]],
    *,
    mutes: Mapping[str, Mapping[str, Any]] | None = None,
    now_ms: int = 0,
) -> list[dict[str, Any]]:
    """The events a pass reports: one per alert opened, then one per alert resolved,
    leaving out the alerts a silence or acknowledgement in ``mutes`` (alert id -> mute) mutes."""
    mutes = mutes or {}

    def loud(alert: Mapping[str, Any]) -> bool:
        return not mute_applies(mutes.get(str(alert.get("id"))), alert, now_ms)

    return [{"event": "opened", "alert": a} for a in opened if loud(a)] + [
        {"event": "resolved", "alert": a} for a in resolved if loud(a)
    ]
