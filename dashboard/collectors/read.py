"""The read end of a collector pass: everything a pass needs from the MQ Redis, gathered
before anything is derived.

:func:`read_cluster` takes what it reads the cluster with in one call
(:func:`dashboard.clusters.pass_readers`), then reads, each module once:

- the snapshot (:func:`~dashboard.collectors.failover.pass_snapshot`: :mod:`mqcore.snapshot`
  on the cluster's replica or primary, with the pipelines' checkpoint summaries, without
  the partitions' last ids that no group's position tells) and, when the master changed
  since the previous pass, what the change brought back
  (:func:`~dashboard.collectors.failover.change_seen`, through the bounded reads of
  :func:`mqcore.admin.failover.pending_up_to`);
- the retention rules' risks: a backlog the snapshot cannot tell is counted on the MQ
  Redis, a bounded read (:mod:`dashboard.collectors.retention_risk`);
- once a minute, the probes of its Redis in one go
  (:func:`mqcore.admin.probes.minute_probe`: Java's data, Redis's health, a rotating share
  of the topics' memory), and the memory series' history of the topics it measured (the
  console store's, handed in as ``history``), from which the derive stage tells growth.

A failure of the snapshot is the :class:`Reading`'s ``error``; a probe's failure only
leaves its part out.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from dashboard import clusters
from dashboard.collectors.failover import ChangeSeen, change_seen, pass_snapshot
from dashboard.collectors.retention_risk import retention_risks
from mqcore.admin.failover import pending_up_to
from mqcore.admin.probes import MinuteProbe, minute_probe
from mqcore.config import redact_urls
from mqcore.models import ClusterSnapshot, RetentionRisk
from mqcore.retention.counting import Counter

__all__ = ["History", "Points", "Reading", "read_cluster"]

log = logging.getLogger(__name__)

Points = list[tuple[int, float]]
History = Callable[[list[str]], dict[str, Points]]  # topic -> its memory_bytes points


@dataclass
class Reading:
    """What one pass read: the snapshot (None when the read failed: ``error``) and, on a
    sampled pass, the probes."""

    snapshot: ClusterSnapshot | None
    error: str | None = None
    sampled: bool = False  # the once-a-minute reads were made
    java: dict[str, Any] | None = None
    redis: dict[str, Any] | None = None
    probe: MinuteProbe | None = None  # the minute's probes (their memory part: ``memory``)
    history: dict[str, Points] = field(default_factory=dict)  # of the topics measured
    risks: dict[tuple[str, str], RetentionRisk] = field(default_factory=dict)
    change: ChangeSeen | None = None  # a master change since the previous pass


def read_cluster(
    cluster: str,
    state: Mapping[str, Any],
    *,
    now_ms: int,
    sampled: bool,
    history: History,
    batch: int = 500,
) -> Reading:
    """One pass's reads of ``cluster`` (``state``: the previous pass's collector state, for
    the master change and the memory probe's turn); never raises for MQ-side failures."""
    readers = clusters.pass_readers(cluster)
    admin = readers.admin
    try:
        snap = pass_snapshot(cluster, readers, batch)
    except Exception as exc:
        error = redact_urls(f"{type(exc).__name__}: {exc}")  # shown on pages
        log.warning("collector %s failed: %s", cluster, error)
        return Reading(None, error=error)
    snap.taken_at_ms = snap.taken_at_ms or now_ms
    reading = Reading(snap, sampled=sampled)
    # after a master change: the acked entries it brought back (bounded reads, primary)
    reading.change = change_seen(
        cluster, snap, state, lambda asks: pending_up_to(admin.client, admin.keys, asks)
    )
    reading.risks = retention_risks(
        snap,
        readers.policy,
        readers.java,
        lambda t, p: Counter(admin.client, admin.keys.partition(t, p)),
    )
    if not sampled:
        return reading
    # once a minute: does a Java service write Kryo data here? how is Redis? this minute's
    # share of the topics' memory (MEMORY USAGE ... SAMPLES n of the next topics' streams)
    probe = minute_probe(
        admin.client,
        admin.keys,
        [t.topic for t in snap.topics],
        [(t.topic, t.partitions) for t in snap.topics if not t.error],
        cursor=int(state.get("memory_cursor") or 0),
        budget=max(1, int(settings.MEMORY_PROBE_STREAMS)),
        samples=int(settings.MEMORY_PROBE_SAMPLES),
    )
    reading.probe = probe
    if probe.java is not None:
        reading.java = {**probe.java, "configured": admin.config.encoding}
    reading.redis = probe.redis
    if probe.failed is not None:
        log.info("collector %s: Java or Redis health probe failed: %s", cluster, probe.failed)
    if probe.memory_error is not None:
        error = type(probe.memory_error).__name__
        log.info(
            "collector %s: memory probe failed on %d topics: %s", cluster, len(probe.picked), error
        )
    measured = sorted(n for n, sizes in probe.memory.items() if any(s is not None for s in sizes))
    reading.history = history(measured) if measured else {}
    return reading
