"""One collector pass over a cluster, as a pipeline: open -> read -> derive -> write.

:func:`collect_cluster` is the service the Celery task and ``manage.py collect`` call:

1. open (:meth:`ConsoleStore.pass_open`): claim the (cluster, slot), so that at most one
   run stores a pass per collection interval, and take the previous pass's state;
2. read (:func:`~dashboard.collectors.read.read_cluster`, the MQ Redis through mqcore):
   the snapshot with the pipelines' checkpoint summaries, what a master change brought
   back, the backlogs the retention rules need, the once-a-minute probes; then the sender
   of the pass's series points (:meth:`~dashboard.store.series.Series.pass_points`), which
   takes the minute's partition sample at once;
3. derive (:func:`~dashboard.collectors.derive.derive_pass`, pure): statuses and the stored
   snapshot, the series points, the master change, then health, alerts, leases and
   incidents;
4. write (:meth:`ConsoleStore.pass_write`): everything in one MULTI/EXEC after the series
   points, and the silences of the alerts that changed;

then the alert events to notify, and the pass in the worker's log (:class:`PassLog`).

The series points go to the write end as soon as each part is at hand: the store's writer
thread appends them while the pass derives the rest (the minute's partition sample right
after the read, the topic and group points with the statuses). A failed read is recorded in
collector health for that cluster only; the caller moves on to the next cluster.

The worker's log: a pass runs every few seconds per cluster, and logging each at INFO
buries everything else in the worker's output. :class:`PassLog` logs each pass at DEBUG
and, at most once per ``every_ms`` (a minute), one INFO line over the latest stored pass of
every cluster: "collected 3 topics, 16 partitions, 6 ms, 2 alerts open". Failures stay at
WARNING where the read logs them.
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from django.conf import settings

from dashboard.alert_mutes import mute_applies
from dashboard.clusters import console_store
from dashboard.collectors.context import Outcome, PassContext, pass_rules
from dashboard.collectors.derive import derive_pass, partition_points
from dashboard.collectors.read import read_cluster
from dashboard.collectors.series import MEMORY_METRIC, PARTITION_SAMPLE_MS
from dashboard.store import ConsoleStore
from mqcore import clock
from mqcore.models import ClusterSnapshot
from mqcore.snapshot import gc_paused

__all__ = ["PassLog", "PassResult", "alert_events", "collect_cluster", "pass_log"]

log = logging.getLogger("dashboard.collectors")

SUMMARY_EVERY_MS = 60_000


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
    result = _collect(cluster, token, store or console_store(), claim, gather_when_claimed)
    pass_log.record(
        cluster,
        snapshot=result.snapshot,
        elapsed_ms=result.elapsed_ms,
        alerts_open=result.alerts_open,
        stored=result.stored,
    )
    return result


def _collect(
    cluster: str,
    token: str | None,
    store: ConsoleStore,
    claim: bool,
    gather_when_claimed: bool,
) -> PassResult:
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
        history=partial(store.series.read, cluster, MEMORY_METRIC, since_ms=since, now_ms=now_ms),
    )
    sender = store.series.pass_points(cluster, now_ms, opened.previous["state"])
    points = sender if opened.mine else None  # None: another run's slot, nothing is written
    try:
        if points is not None and reading.sampled and reading.snapshot is not None:
            # the minute's partition sample goes first: the store appends it while the rest
            # is derived (its writer thread runs the generator)
            points.send(partition_points(reading.snapshot))
        ctx = PassContext(cluster, opened.previous, pass_rules(), now_ms)
        outcome = derive_pass(reading, ctx, sender.buckets, points, started)
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
            rollups=sender.rollups if outcome.snapshot is not None else None,
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


@dataclass
class PassLog:
    """Per worker process: the latest pass per cluster and when the last summary went out."""

    every_ms: int = SUMMARY_EVERY_MS
    latest: dict[str, dict[str, Any]] = field(default_factory=dict)
    last_summary_ms: int | None = None

    def record(
        self,
        cluster: str,
        *,
        snapshot: ClusterSnapshot | None,
        elapsed_ms: float,
        alerts_open: int | None,
        stored: bool,
        now_ms: int | None = None,
    ) -> None:
        now = clock.now_ms() if now_ms is None else now_ms
        topics = snapshot.topics if snapshot is not None else []
        partitions = sum(t.partitions for t in topics)
        log.debug(
            "collector %s: %s, %d topics, %d partitions, %.0f ms, %s alerts open",
            cluster,
            "stored" if stored else "not stored",
            len(topics),
            partitions,
            elapsed_ms,
            "?" if alerts_open is None else alerts_open,
        )
        if stored:
            self.latest[cluster] = {
                "topics": len(topics),
                "partitions": partitions,
                "ms": elapsed_ms,
                "alerts": alerts_open or 0,
            }
        if self.last_summary_ms is None:
            self.last_summary_ms = now  # the first summary comes a minute after the first pass
            return
        if now - self.last_summary_ms < self.every_ms or not self.latest:
            return
        self.last_summary_ms = now
        rows = self.latest.values()
        log.info(
            "collected %d topics, %d partitions, %.0f ms, %d alerts open%s",
            sum(r["topics"] for r in rows),
            sum(r["partitions"] for r in rows),
            sum(r["ms"] for r in rows),
            sum(r["alerts"] for r in rows),
            f" ({len(self.latest)} clusters)" if len(self.latest) > 1 else "",
        )
        self.latest.clear()


pass_log = PassLog()
