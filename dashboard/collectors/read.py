"""The read end of a collector pass: everything a pass needs from the MQ Redis, gathered
before anything is derived.

:func:`read_cluster` takes the cluster's clients once (:mod:`dashboard.clusters`) and
reads the admin snapshot (:mod:`mqcore.snapshot`, with the pipelines' checkpoint summaries,
without the partitions' last ids that no group's position tells) and, once a minute, the
probes of its Redis in one go (:func:`mqcore.admin.probes.minute_probe`: Java's data,
Redis's health, a rotating share of the topics' memory, :func:`memory_pass`). The
retention rules' risks are read here too: a backlog the snapshot cannot tell is counted on
the MQ Redis, a bounded read (:mod:`dashboard.collectors.retention_risk`). A failure of the
snapshot is the :class:`Reading`'s ``error``; a probe's failure only leaves its part out.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from dashboard import clusters
from dashboard.collectors.failover import redelivered_after
from dashboard.collectors.retention_risk import retention_risks
from dashboard.collectors.series import MEMORY_METRIC
from mqcore.admin import Admin
from mqcore.admin.failover import pending_up_to
from mqcore.admin.probes import MinuteProbe, memory_pick, minute_probe
from mqcore.config import redact_urls
from mqcore.models import ClusterSnapshot, Redelivered, ReplicaRead, RetentionRisk
from mqcore.retention.counting import Counter
from mqcore.snapshot import server_facts

__all__ = ["History", "MemoryPass", "Reading", "memory_pass", "read_cluster"]

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
    memory: MemoryPass | None = None
    risks: dict[tuple[str, str], RetentionRisk] = field(default_factory=dict)
    # after a master change: entries acked before it and pending again (None: no change)
    redelivered: list[Redelivered] | None = None


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
    the memory probe's turn); never raises for MQ-side failures."""
    admin = clusters.admin(cluster)
    policy, java = clusters.retention_policy(cluster), clusters.java_retention(cluster)
    try:
        snap = _snapshot(cluster, admin, batch)
    except Exception as exc:
        error = redact_urls(f"{type(exc).__name__}: {exc}")  # shown on pages
        log.warning("collector %s failed: %s", cluster, error)
        return Reading(None, error=error)
    snap.taken_at_ms = snap.taken_at_ms or now_ms
    reading = Reading(snap, sampled=sampled)
    reading.risks = retention_risks(
        snap, policy, java, lambda t, p: Counter(admin.client, admin.keys.partition(t, p))
    )
    # after a master change: the acked entries it brought back (bounded reads, primary)
    reading.redelivered = redelivered_after(
        cluster, snap, state, lambda asks: pending_up_to(admin.client, admin.keys, asks)
    )
    if not sampled:
        return reading
    # once a minute: does a Java service write Kryo data here? how is Redis? this minute's
    # share of the topics' memory (MEMORY USAGE ... SAMPLES n of the next topics' streams)
    cursor = int(state.get("memory_cursor") or 0)
    budget = max(1, int(settings.MEMORY_PROBE_STREAMS))
    probe = minute_probe(
        admin.client,
        admin.keys,
        [t.topic for t in snap.topics],
        _measured(snap),
        cursor=cursor,
        budget=budget,
        samples=int(settings.MEMORY_PROBE_SAMPLES),
    )
    if probe.java is not None:
        reading.java = {**probe.java, "configured": admin.config.encoding}
    reading.redis = probe.redis
    if probe.failed is not None:
        log.info("collector %s: Java or Redis health probe failed: %s", cluster, probe.failed)
    reading.memory = memory_pass(
        snap,
        state.get("memory") or {},
        cursor,
        fetch=lambda _picked: _probed(probe),
        history=history,
        now_ms=now_ms,
        budget=budget,
    )
    if reading.memory.errors:
        errors = ", ".join(reading.memory.errors[:5])
        log.info("collector %s: memory probe failed on %s", cluster, errors)
    return reading


def _snapshot(cluster: str, admin: Admin, batch: int) -> ClusterSnapshot:
    """The pass's snapshot: from the cluster's replica when it reads one
    (:func:`dashboard.clusters.snapshot_admin`), with the primary's run id and replication
    facts and how far the replica was behind (``replica``); from the primary when the
    cluster reads it, or when the replica cannot be read."""
    reader = clusters.snapshot_admin(cluster)
    if reader is not None:
        try:
            snap = reader.snapshot(batch=batch, last_ids=False)
        except Exception as exc:
            error = redact_urls(f"{type(exc).__name__}: {exc}")
            log.warning("collector %s: replica read failed, read the primary: %s", cluster, error)
        else:
            replica = snap.replication
            snap.redis_run_id, snap.replication = server_facts(admin.client)
            if replica:
                primary = snap.replication
                snap.replica = ReplicaRead(
                    run_id=replica.run_id,
                    port=replica.port,
                    offset=replica.offset,
                    lag_bytes=max(0, primary.offset - replica.offset) if primary else None,
                    link=replica.link,
                    last_io_s=replica.last_io_s,
                )
            return snap
    return admin.snapshot(batch=batch, last_ids=False)


def _measured(snap: ClusterSnapshot) -> list[tuple[str, int]]:
    """The topics (name, partitions) the memory probe takes its turns over."""
    return [(t.topic, t.partitions) for t in snap.topics if not t.error]


def _probed(probe: MinuteProbe) -> dict[str, list[int | None]]:
    """What the probe measured: the topics :func:`memory_pass` picks (the same turn of the
    same topics, :func:`~mqcore.admin.probes.memory_pick`), or the probe's failure."""
    if probe.memory_error is not None:
        raise probe.memory_error
    return probe.memory


# --- per-topic memory ----------------------------------------------------------------------------
# Per-topic memory: what a topic's partition streams take in Redis, sampled with a bounded
# cost and kept as the ``memory_bytes`` series and in the snapshot (``topic["memory"]``).
#
# Once a minute the pass asks ``MEMORY USAGE key SAMPLES n`` (one pipeline) of the partition
# streams of the next topics in turn (at most ``MEMORY_PROBE_STREAMS`` streams; the cursor in the
# collector state says where the next minute starts), so a deployment of any size costs
# the same per minute and every topic is measured every ``topics x partitions / budget``
# minutes. The growth the ``memory_growth`` alert watches is the newest sample against the
# oldest one of the ``MEMORY_GROWTH_WINDOW_S`` window (from the stored series).


@dataclass
class MemoryPass:
    points: list[tuple[str, str, float]] = field(default_factory=list)
    state: dict[str, dict[str, Any]] = field(default_factory=dict)  # topic -> latest memory
    cursor: int = 0
    errors: list[str] = field(default_factory=list)


def memory_pass(
    snap: ClusterSnapshot,
    previous: Mapping[str, Any],
    cursor: int,
    *,
    fetch: Callable[[list[tuple[str, int]]], dict[str, list[int | None]]],
    history: Callable[[list[str]], dict[str, Points]],
    now_ms: int,
    budget: int,
) -> MemoryPass:
    """Measure the next topics: their points, the new per-topic memory state (topics gone
    from the snapshot dropped) and the next cursor. When the read fails, topics keep their
    last values."""
    topics = _measured(snap)
    names = {name for name, _ in topics}
    out = MemoryPass(state={k: dict(v) for k, v in previous.items() if k in names})
    picked, out.cursor = memory_pick(topics, cursor, budget)
    measured: dict[str, float] = {}
    per_partition: dict[str, list[int | None]] = {}
    try:
        got = fetch(picked) if picked else {}
    except Exception as exc:  # the probe's failure never fails the pass: last values stay
        out.errors.append(f"{len(picked)} topics: {type(exc).__name__}")
        got = {}
    for name, sizes in got.items():
        known = [s for s in sizes if s is not None]
        if known:
            measured[name] = float(sum(known))
            per_partition[name] = list(sizes)
    past = history(sorted(measured)) if measured else {}
    for name, value in measured.items():
        points = [p for p in past.get(name) or [] if p[0] < now_ms]
        start_ms, start = points[0] if points else (now_ms, value)
        out.state[name] = {
            "bytes": value,
            "at_ms": now_ms,
            "from_bytes": start,
            "from_ms": int(start_ms),
            "partitions": per_partition[name],
        }
        out.points.append((MEMORY_METRIC, name, value))
    return out
