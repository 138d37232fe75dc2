"""Statuses into the stored snapshot: per-partition windows, group and topic roll-ups.

:func:`snapshot_enrich` turns one ``ClusterSnapshot`` (as a dict) plus the previous
window state into the stored snapshot and the next window state; the rules
themselves are :mod:`dashboard.status.rules`. Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dashboard.status.rules import (
    _VALUE,
    Status,
    Thresholds,
    _caught_up,
    _rules,
    thresholds_for,
)
from mqcore.lag import topic_totals

__all__ = ["dlq_history_step", "snapshot_enrich"]


def _alive_map(topic: Mapping[str, Any], stop_after_ms: int) -> dict[tuple[str, int], bool]:
    """(group, partition) -> whether a live owner/consumer is seen for it."""
    leases = topic.get("leases") or []
    owned_groups = {lease["group"] for lease in leases if lease.get("owner")}
    alive: dict[tuple[str, int], bool] = {}
    for lease in leases:
        if lease.get("owner"):
            alive[(lease["group"], int(lease["partition"]))] = True
    idle_ok: dict[str, bool] = {}
    for consumer in topic.get("consumers") or []:
        age = consumer.get("last_seen_ms")
        if age is None:
            age = consumer.get("idle_ms")
        if age is not None and int(age) <= stop_after_ms:
            idle_ok[consumer["group"]] = True
    for group in {c["group"] for c in topic.get("consumers") or []} - owned_groups:
        if idle_ok.get(group):
            for part in range(int(topic.get("partitions") or 0)):
                alive[(group, part)] = True
    # a pipeline group has no leases nor consumers: its checkpoints are its activity
    for g in topic.get("groups") or []:
        age = (g.get("pipeline") or {}).get("checkpoint_age_ms")
        if isinstance(age, int) and age <= stop_after_ms:
            for part in range(int(topic.get("partitions") or 0)):
                alive[(g["group"], part)] = True
    return alive


def _partition_step(
    prev: Sequence[Any] | None, part: Mapping[str, Any], now: int, alive: bool, th: Thresholds
) -> list[Any]:
    """The next window entry of one partition: ``[last_active, pending, lags, positions, ids]``.

    ``last_active`` moves to ``now`` when the position moved, pending shrank, a
    live owner or consumer is seen, or the lag is within the allowed lag.
    """
    entries_read = part.get("entries_read")
    last_id = str(part["last_delivered_id"])
    position = entries_read if entries_read is not None else last_id
    pending = part.get("pending") or 0
    lag = part.get("lag")
    size = th.window_samples
    if prev:
        last_active, prev_pending, lags, positions, *rest = prev
        ids = rest[0] if rest else []  # state written before ids were kept
        moved = positions[-1] != position or pending < (prev_pending or 0)
        lags, positions = [*lags, lag][-size:], [*positions, position][-size:]
        ids = [*ids, last_id][-size:]
    else:
        last_active, moved, lags, positions, ids = now, False, [lag], [position], [last_id]
    if moved or alive or _caught_up(lag, th.allowed_lag):
        last_active = now
    return [last_active, pending, lags, positions, ids]


def _group_status(
    group: dict[str, Any],
    g_old: Sequence[Any],
    topic_error: str | None,
    alive: Mapping[tuple[str, int], bool],
    th: Thresholds,
    now: int,
) -> tuple[list[Any], Status, str]:
    """Set the statuses of ``group`` and its partitions; return its next window state."""
    gname = group["group"]
    g_new: list[Any] = []
    results: list[tuple[Status, str, int]] = []
    full = 0
    for part in group.get("partitions") or []:
        pid = int(part["partition"])
        prev = g_old[pid] if pid < len(g_old) else None
        entry = _partition_step(prev, part, now, alive.get((gname, pid), False), th)
        g_new.extend([None] * (pid - len(g_new)))
        g_new.append(entry)
        last_active, _, lags, positions, ids = entry
        full += len(lags) >= th.window_samples
        status, reason = _rules(
            [*lags[:-1], None] if topic_error else lags,
            positions,
            topic_error,
            (part.get("lag_reason") or "") if part.get("lag") is None else "",
            th,
            int(last_active),
            now,
            ids=ids,
        )
        part["status"], part["status_reason"] = _VALUE[status], reason
        results.append((status, reason, pid))
    if topic_error:
        g_status, g_reason = Status.ERR, f"cannot read: {topic_error}"
    elif results:
        top = max(results, key=lambda r: r[0].severity)
        g_status, g_reason = top[0], f"partition {top[2]}: {top[1]}"
    else:
        g_status, g_reason = Status.UNKNOWN, "no partitions"
    group["status"], group["status_reason"] = g_status.value, g_reason
    # Burrow's completeness: the share of partitions whose window is full
    group["complete"] = round(full / len(results), 4) if results else 0.0
    return g_new, g_status, g_reason


def snapshot_enrich(
    snap: dict[str, Any],
    state: Mapping[str, Any],
    *,
    cluster: str,
    defaults: Thresholds,
    per_topic: Mapping[str, Mapping[str, Any]],
    dlq_window_ms: int,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Add statuses, window completeness and topic totals to ``snap`` (mutated and returned).

    Returns the next state: ``windows`` (topic -> group -> one entry per partition:
    ``[last_active_ms, pending, [lag, ...], [position, ...], [last_id, ...]]``,
    oldest sample first) and ``dlq`` (topic -> [[at, dlq_length], ...]); entities no
    longer seen are dropped. A position is ``entries-read`` when Redis knows it, else
    the last-delivered id. Each group gets ``complete``: the share (0..1) of its
    partitions whose window holds ``window_samples`` samples.
    """
    now = int(snap["taken_at_ms"])
    old_windows: Mapping[str, Any] = state.get("windows") or {}
    old_dlq: Mapping[str, Any] = state.get("dlq") or {}
    windows: dict[str, Any] = {}
    dlq_hist: dict[str, Any] = {}
    snap["cluster"] = cluster
    for topic in snap.get("topics") or []:
        name = topic["topic"]
        th = thresholds_for(name, defaults=defaults, per_topic=per_topic)
        alive = _alive_map(topic, th.stop_after_ms)
        topic_error = topic.get("error")
        error_text = str(topic_error) if topic_error else None
        group_statuses: list[tuple[Status, str]] = []
        t_old = old_windows.get(name)
        if not isinstance(t_old, dict):  # first pass, or state of an older format
            t_old = {}
        t_new: dict[str, list[Any]] = {}
        windows[name] = t_new
        for group in topic.get("groups") or []:
            g_old = t_old.get(group["group"])
            t_new[group["group"]], g_status, g_reason = _group_status(
                group, g_old if isinstance(g_old, list) else [], error_text, alive, th, now
            )
            group_statuses.append((g_status, f"group {group['group']}, {g_reason}"))
        if topic_error:
            t_status, t_reason = Status.ERR, f"cannot read: {topic_error}"
        elif group_statuses:
            t_status, t_reason = max(group_statuses, key=lambda r: r[0].severity)
        else:
            t_status, t_reason = Status.OK, "no consumer groups"
        topic["status"], topic["status_reason"] = t_status.value, t_reason
        topic.update(topic_totals(topic.get("groups") or []))
        hist, growth = dlq_history_step(
            old_dlq.get(name) or [], now, int(topic.get("dlq_length") or 0), dlq_window_ms
        )
        dlq_hist[name] = hist
        topic["dlq_growth"] = growth
    return snap, {"windows": windows, "dlq": dlq_hist}


def dlq_history_step(
    history: Sequence[Sequence[int]], now_ms: int, length: int, window_ms: int
) -> tuple[list[list[int]], int | None]:
    """Append (now, length) sparsely and return the growth vs about ``window_ms`` ago.

    Points are kept at least ``window_ms / 10`` apart, plus one older than the
    window, so the state stays a dozen points per topic.
    """
    points = [[int(a), int(b)] for a, b in history]
    base = [p for p in points if p[0] <= now_ms - window_ms]
    growth = length - base[-1][1] if base else None
    if not points or now_ms - points[-1][0] >= max(1, window_ms // 10):
        points.append([now_ms, length])
    older = [p for p in points if p[0] <= now_ms - window_ms]
    recent = [p for p in points if p[0] > now_ms - window_ms]
    return ([*older[-1:], *recent], growth)
