"""Incident events between two collector passes: what the incident timeline shows.

Pure functions, no I/O. Each event is a small dict::

    {"at_ms", "kind", "topic", "group", "partition", "severity", "text", "data"}

``topic`` is "" for cluster-wide events (collector gaps, MQ Redis restarts),
``group`` "" and ``partition`` None when they do not apply. ``severity`` is
``info``, ``warning`` or ``critical``. Texts name groups, consumers and pipelines
(untrusted text): pages escape them, charts escape them again for Plotly.

:func:`lease_diff` tells the lease ownership changes between two passes (the lease
timeline). Kinds written by the collector: ``status``, ``lease``, ``consumer``, ``dlq``,
``checkpoint``, ``collector``, ``redis``. The memory carried from one pass to
the next lives in the collector state under ``incidents`` (see
:func:`incident_diff`); the first pass only records it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mqcore.models import ClusterSnapshot, MasterChange, PipelineSummary, TopicSnapshot

__all__ = [
    "COLLECTOR_KINDS",
    "checkpoint_events",
    "collector_failure_event",
    "collector_gap_event",
    "consumer_events",
    "dlq_events",
    "dlq_growth_events",
    "event",
    "incident_diff",
    "lease_diff",
    "lease_events",
    "master_change_event",
    "redis_restart_event",
    "status_events",
]

COLLECTOR_KINDS = ("status", "lease", "consumer", "dlq", "checkpoint", "collector", "redis")
SEP = "\x1f"

_STATUS_SEVERITY = {
    "OK": "info",
    "UNKNOWN": "warning",
    "WARN": "warning",
    "REWIND": "warning",
    "STALL": "critical",
    "STOP": "critical",
    "ERR": "critical",
}
_LEASE_SEVERITY = {"expired": "warning", "taken_over": "warning"}


def event(
    at_ms: int,
    kind: str,
    text: str,
    *,
    topic: str = "",
    group: str = "",
    partition: int | None = None,
    severity: str = "info",
    data: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One incident event in the shape the store, the pages and the API share."""
    return {
        "at_ms": int(at_ms),
        "kind": kind,
        "topic": topic,
        "group": group,
        "partition": partition,
        "severity": severity,
        "text": text,
        "data": dict(data or {}),
    }


def _topics(snap: ClusterSnapshot) -> list[TopicSnapshot]:
    return [t for t in snap.topics if t.topic]


def status_events(
    previous: Mapping[str, str] | None, snap: ClusterSnapshot, now_ms: int
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """A group's status changed (from -> to); returns the events and the new memory."""
    memory: dict[str, str] = {}
    for t in _topics(snap):
        for g in t.groups:
            memory[f"{t.topic}{SEP}{g.group}"] = g.status.value
    if previous is None:
        return [], memory
    events = []
    before = previous.get
    for key in sorted(k for k, new in memory.items() if before(k) not in (None, new)):
        old, new = previous[key], memory[key]
        topic, group = key.split(SEP, 1)
        text = f"group {group}: status {old} → {new}"
        if new == "REWIND":
            text += " (position went back: entries will be delivered again)"
        events.append(
            event(
                now_ms,
                "status",
                text,
                topic=topic,
                group=group,
                severity=_STATUS_SEVERITY.get(new, "warning"),
                data={"from": old, "to": new},
            )
        )
    return events, memory


def lease_events(by_topic: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """The lease timeline's changes (:func:`lease_diff`) as incident events."""
    out = []
    for topic in sorted(by_topic):
        for change in by_topic[topic]:
            kind = str(change.get("event") or "")
            owner, before = change.get("owner"), change.get("previous_owner")
            part = int(change.get("partition") or 0)
            group = str(change.get("group") or "")
            what = {
                "acquired": f"acquired by {owner}",
                "taken_over": f"taken over by {owner} from {before}",
                "expired": f"expired (owner {before})",
                "released": f"released by {before}",
            }.get(kind, kind)
            out.append(
                event(
                    int(change.get("at_ms") or 0),
                    "lease",
                    f"group {group}, partition {part}: lease {what}",
                    topic=topic,
                    group=group,
                    partition=part,
                    severity=_LEASE_SEVERITY.get(kind, "info"),
                    data={
                        "event": kind,
                        "owner": owner,
                        "previous_owner": before,
                        "epoch": change.get("epoch"),
                    },
                )
            )
    return out


def consumer_events(
    previous: Sequence[str] | None, snap: ClusterSnapshot, now_ms: int
) -> tuple[list[dict[str, Any]], list[str]]:
    """Consumers that joined or left a group since the previous pass."""
    topics = _topics(snap)
    errored = {t.topic for t in topics if t.error}
    current = {k for k in previous or () if k.split(SEP, 1)[0] in errored} if errored else set()
    for t in topics:
        if t.error:
            continue
        for c in t.consumers:
            if c.name:
                current.add(f"{t.topic}{SEP}{c.group}{SEP}{c.name}")
    if previous is None:
        return [], sorted(current)
    old = set(previous)
    events = []
    for key in sorted(current ^ old):
        topic, group, name = key.split(SEP, 2)
        joined = key in current
        events.append(
            event(
                now_ms,
                "consumer",
                f"group {group}: consumer {name} {'joined' if joined else 'left'}",
                topic=topic,
                group=group,
                severity="info" if joined else "warning",
                data={"consumer": name, "change": "joined" if joined else "left"},
            )
        )
    return events, sorted(current)


def dlq_events(
    previous: Mapping[str, int] | None, snap: ClusterSnapshot, now_ms: int, *, burst: int
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """A DLQ burst: a topic's dead letters grew by at least ``burst`` since the last pass."""
    memory: dict[str, int] = {}
    events = []
    for topic in _topics(snap):
        name = topic.topic
        if topic.error:
            if previous and name in previous:
                memory[name] = int(previous[name])
            continue
        length = topic.dlq_length
        memory[name] = length
        if previous is None or name not in previous:
            continue
        grown = length - int(previous[name])
        if grown >= max(1, burst):
            events.append(
                event(
                    now_ms,
                    "dlq",
                    f"{grown} dead letters since the last pass (DLQ now {length})",
                    topic=name,
                    severity="warning",
                    data={"added": grown, "length": length},
                )
            )
    return events, memory


def dlq_growth_events(
    previous: Sequence[str] | None, snap: ClusterSnapshot, now_ms: int, *, threshold: int
) -> tuple[list[dict[str, Any]], list[str]]:
    """A topic's DLQ started growing (by ``threshold`` or more over the growth window, the
    ``dlq_growth`` alert's rule), or stopped; returns the events and the growing topics.

    A steady trickle of letters never makes a burst (:func:`dlq_events`): this puts its
    start and its end on the timeline. A topic that could not be read keeps its state."""
    was = set(previous or ())
    growing: set[str] = set()
    events = []
    for topic in _topics(snap):
        name = topic.topic
        if topic.error:
            if name in was:
                growing.add(name)
            continue
        growth = topic.dlq_growth
        if growth is None or growth < max(1, threshold):
            if previous is not None and name in was:
                events.append(
                    event(
                        now_ms,
                        "dlq",
                        f"DLQ growth stopped (DLQ now {topic.dlq_length})",
                        topic=name,
                        data={"change": "growth_stopped", "length": topic.dlq_length},
                    )
                )
            continue
        growing.add(name)
        if previous is not None and name not in was:
            events.append(
                event(
                    now_ms,
                    "dlq",
                    f"DLQ growing: {growth} dead letters over the growth window"
                    f" (DLQ now {topic.dlq_length})",
                    topic=name,
                    severity="warning",
                    data={"change": "growth_started", "added": growth, "length": topic.dlq_length},
                )
            )
    return events, sorted(growing)


def checkpoint_events(
    previous: Mapping[str, Sequence[int]] | None,
    pipelines: Sequence[PipelineSummary],
    now_ms: int,
) -> tuple[list[dict[str, Any]], dict[str, list[int]]]:
    """A pipeline's checkpoint failed, or a restart restored one (new latest ids)."""
    memory: dict[str, list[int]] = {}
    events = []
    for p in pipelines:
        name = p.pipeline
        if not name:
            continue
        failed, restored = int(p.last_failed_id or -1), int(p.last_restore_id or -1)
        memory[name] = [failed, restored]
        if previous is None:
            continue
        old = list(previous.get(name) or [-1, -1])
        topic, group = p.topic, p.group
        if failed >= 0 and failed != old[0]:
            reason = (p.last_failure_reason or "no reason recorded")[:300]
            events.append(
                event(
                    _when(p.last_failed_at_ms, now_ms),
                    "checkpoint",
                    f"pipeline {name}: checkpoint {failed} failed: {reason}",
                    topic=topic,
                    group=group,
                    severity="critical",
                    data={"pipeline": name, "batch_id": failed, "change": "failed"},
                )
            )
        if restored >= 0 and restored != old[1]:
            outcome = p.last_restore_outcome
            events.append(
                event(
                    _when(p.last_restore_at_ms, now_ms),
                    "checkpoint",
                    f"pipeline {name}: restored checkpoint {restored}"
                    + (f" ({outcome})" if outcome else ""),
                    topic=topic,
                    group=group,
                    severity="warning",
                    data={"pipeline": name, "batch_id": restored, "change": "restored"},
                )
            )
    return events, memory


def _when(raw: Any, now_ms: int) -> int:
    """The event's own time when it is plausible, else the pass time."""
    try:
        at = int(raw)
    except (TypeError, ValueError):
        return now_ms
    return at if 0 < at <= now_ms else now_ms


def collector_gap_event(
    last_success_ms: int | None, now_ms: int, interval_ms: int
) -> dict[str, Any] | None:
    """A gap: the previous successful pass is older than two collection intervals."""
    if not last_success_ms:
        return None
    gap = now_ms - int(last_success_ms)
    if gap <= 2 * interval_ms:
        return None
    return event(
        now_ms,
        "collector",
        f"collector gap: no successful pass for {gap // 1000} s",
        severity="warning",
        data={"gap_ms": gap, "since_ms": int(last_success_ms)},
    )


def collector_failure_event(error: str, now_ms: int, consecutive: int) -> dict[str, Any] | None:
    """The first failed pass of a run of failures (the gap event closes the run)."""
    if consecutive != 1:
        return None
    return event(
        now_ms,
        "collector",
        f"collector pass failed: {error[:300]}",
        severity="critical",
        data={"error": error[:300]},
    )


def redis_restart_event(
    old_run: str | None, new_run: str | None, missing: Sequence[str], now_ms: int
) -> dict[str, Any] | None:
    """MQ Redis restarted: its run id changed since the previous pass."""
    if not old_run or not new_run or old_run == new_run:
        return None
    text = "MQ Redis restarted (run id changed)"
    if missing:  # a count: a topic-less event is read by every viewer of the cluster
        text += f"; {len(missing)} consumer group(s) gone (listed on the collectors page)"
    return event(
        now_ms,
        "redis",
        text,
        severity="critical" if missing else "warning",
        data={"run_id": new_run, "previous_run_id": old_run, "missing_groups": len(missing)},
    )


def incident_diff(
    memory: Mapping[str, Any] | None,
    snap: ClusterSnapshot,
    lease_changes: Mapping[str, Sequence[Mapping[str, Any]]],
    *,
    now_ms: int,
    previous_run_id: str | None,
    last_success_ms: int | None,
    interval_ms: int,
    dlq_burst: int,
    missing_groups: Sequence[str] = (),
    dlq_growth: int = 1,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every incident event of one successful pass and the memory for the next one."""
    old: Mapping[str, Any] = memory if isinstance(memory, Mapping) else {}
    first = not old
    statuses, status_mem = status_events(None if first else old.get("status") or {}, snap, now_ms)
    joined, consumer_mem = consumer_events(
        None if first else old.get("consumers") or [], snap, now_ms
    )
    bursts, dlq_mem = dlq_events(
        None if first else old.get("dlq") or {}, snap, now_ms, burst=dlq_burst
    )
    growth, growing = dlq_growth_events(
        None if first or "dlq_growing" not in old else old["dlq_growing"] or [],
        snap,
        now_ms,
        threshold=dlq_growth,
    )
    checkpoints, cp_mem = checkpoint_events(
        None if first else old.get("checkpoints") or {}, snap.pipelines, now_ms
    )
    events = [*statuses, *lease_events(lease_changes), *joined, *bursts, *growth, *checkpoints]
    for extra in (
        collector_gap_event(last_success_ms, now_ms, interval_ms),
        redis_restart_event(previous_run_id, snap.redis_run_id, missing_groups, now_ms),
    ):
        if extra is not None:
            events.append(extra)
    return events, {
        "status": status_mem,
        "consumers": consumer_mem,
        "dlq": dlq_mem,
        "checkpoints": cp_mem,
        "dlq_growing": growing,
    }


def _lease_state(
    snap: ClusterSnapshot, previous: Mapping[str, Any] | None, now_ms: int, *, owned_only: bool
) -> dict[str, Any]:
    """key -> [owner, epoch, expires_at_ms] of the snapshot's leases (those with an owner
    only, with ``owned_only``); a topic that could not be read keeps its previous ones."""
    state: dict[str, Any] = {}
    for topic in snap.topics:
        name = topic.topic
        if topic.error:
            for key, value in (previous or {}).items():
                if key.split("\x1f", 1)[0] == name:
                    state[key] = value
            continue
        for lease in topic.leases:
            owner = lease.owner
            if owner is None and owned_only:
                continue
            state[f"{name}\x1f{lease.group}\x1f{lease.partition}"] = [
                owner,
                lease.epoch,
                now_ms + (lease.ttl_ms or 0),
            ]
    return state


def _changes(previous: Mapping[str, Any], state: Mapping[str, Any]) -> tuple[list[str], int]:
    """The keys of ``state`` whose owner or epoch changed, and how many were in ``previous``."""
    changed: list[str] = []
    seen = 0
    before = previous.get
    for key, new in state.items():
        old = before(key)
        if old is None:
            if new[0] is not None:
                changed.append(key)
        else:
            seen += 1
            if old[0] != new[0] or old[1] != new[1]:
                changed.append(key)
    return changed, seen


def lease_diff(
    previous: Mapping[str, Any] | None, snap: ClusterSnapshot, now_ms: int
) -> tuple[dict[str, list[dict[str, Any]]], dict[str, Any]]:
    """Ownership changes since the previous pass, per topic (newest first), and the new state.

    State: "topic\\x1fgroup\\x1fpartition" -> [owner, epoch, expires_at_ms]. A lease
    that vanished before its TTL ran out was released; after it, it expired.
    The first pass ever only records the state.
    """
    events: dict[str, list[dict[str, Any]]] = {}
    if previous is None:
        return events, _lease_state(snap, previous, now_ms, owned_only=False)
    # a lease without an owner then and now changes nothing: only owners are compared. A
    # snapshot has one lease per group and partition: when every lease of the previous pass
    # still has an owner, the leases without one need not be looked at.
    state = _lease_state(snap, previous, now_ms, owned_only=True)
    changed, seen = _changes(previous, state)
    if seen != len(previous):  # some lost their owner or vanished
        state = _lease_state(snap, previous, now_ms, owned_only=False)
        changed, _ = _changes(previous, state)
        changed.extend(key for key in previous if key not in state)
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


def master_change_event(change: MasterChange) -> dict[str, Any]:
    """The MQ Redis's master changed (a failover): what it undid, in one event."""
    lost = change.to_offset < change.from_offset
    text = f"MQ Redis master changed ({change.reason}): run id {change.from_run_id[:8]} → "
    text += f"{change.to_run_id[:8]}"
    if change.rewound:
        text += f"; {len(change.rewound)} groups went back (REWIND, cause: failover)"
    if change.redelivered:
        some = "" if change.redelivered_exact else "at least "
        text += (
            f"; {some}{change.redelivered} acked entries pending again (redelivered after failover)"
        )
    return event(
        change.at_ms,
        "redis",
        text,
        severity="critical" if change.rewound or change.redelivered or lost else "warning",
        data={
            "master_change": change.reason,
            "from_run_id": change.from_run_id,
            "to_run_id": change.to_run_id,
            "from_offset": change.from_offset,
            "to_offset": change.to_offset,
            "rewound": list(change.rewound),
            "redelivered": change.redelivered,
            "redelivered_exact": change.redelivered_exact,
        },
    )
