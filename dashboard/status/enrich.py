"""Statuses into the stored snapshot: per-partition windows, group and topic roll-ups.

:func:`snapshot_enrich` turns one ``ClusterSnapshot`` plus the previous
window state into the stored snapshot and the next window state; the rules
themselves are :mod:`dashboard.status.rules`. Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from typing import Any

from dashboard.status.rules import (
    _ERR,
    _OK,
    _SEVERITY,
    _UNKNOWN,
    Status,
    Thresholds,
    _rules,
    thresholds_for,
)
from mqcore.lag import topic_totals
from mqcore.models import ClusterSnapshot, GroupLag, TopicSnapshot

__all__ = ["dlq_history_step", "snapshot_enrich"]


def _alive_map(topic: TopicSnapshot, stop_after_ms: int) -> dict[str, set[int]]:
    """group -> the partitions for which a live owner, consumer or checkpoint is seen."""
    alive: dict[str, set[int]] = {}
    for lease in topic.leases:
        if lease.owner:
            group = lease.group
            parts = alive.get(group)
            if parts is None:
                parts = alive[group] = set()
            parts.add(lease.partition)
    # groups alive on every partition: an active consumer of a group without lease owners,
    # or a pipeline group (no leases nor consumers: its checkpoints are its activity)
    every: set[str] = set()
    consumers = topic.consumers
    if consumers:
        owned = set(alive)
        for consumer in consumers:
            group = consumer.group
            if group in owned or group in every:
                continue
            age = consumer.last_seen_ms
            if age is None:
                age = consumer.idle_ms
            if age <= stop_after_ms:
                every.add(group)
    for g in topic.groups:
        mark = g.pipeline
        if mark:
            age = mark.checkpoint_age_ms
            if age is not None and age <= stop_after_ms:
                every.add(g.group)
    if every:
        count = topic.partitions
        for group in every:
            alive.setdefault(group, set()).update(range(count))
    return alive


def _slide(window: list[Any], value: Any, size: int) -> list[Any]:
    """``[*window, value][-size:]``: ``window`` itself when that is already it (a full
    window holding ``value`` only: nothing changed), else one new list."""
    n = len(window)
    if n == size and window[-1] == value and window.count(value) == n:
        return window
    keep = n + 1 - size
    if keep <= 0 or size <= 0:
        return [*window, value][-size:]
    out = window[keep:]
    out.append(value)
    return out


_NO_PARTITIONS: frozenset[int] = frozenset()


def _group_status(
    group: GroupLag,
    g_old: Sequence[Any],
    topic_error: str | None,
    alive: Container[int],
    th: Thresholds,
    now: int,
) -> tuple[list[Any], Status, str]:
    """Set the statuses of ``group`` and its partitions; return its next window state.

    ``alive``: the partitions a live owner or consumer is seen for. A partition's window
    entry is ``[last_active, pending, lags, positions, ids]``: ``last_active`` moves to
    ``now`` when the position moved, pending shrank, a live owner or consumer is seen, or
    the lag is within the allowed lag. The lists of the previous entry are shared, not
    copied, when they do not change (state is read-only below its top level).
    """
    g_new: list[Any] = []
    n_old, size, allowed = len(g_old), th.window_samples, th.allowed_lag
    count = full = 0
    top_severity, top = -1, None  # the first worst partition
    for part in group.partitions:
        pid = part.partition
        entries_read = part.entries_read
        last_id = part.last_delivered_id
        position = entries_read if entries_read is not None else last_id
        pending = part.pending
        lag = part.lag
        prev = g_old[pid] if pid < n_old else None
        if prev:
            last_active, lags, positions = prev[0], prev[2], prev[3]
            moved = positions[-1] != position or pending < (prev[1] or 0)
            lags, positions = _slide(lags, lag, size), _slide(positions, position, size)
            # state written before ids were kept has none
            ids = _slide(prev[4], last_id, size) if len(prev) > 4 else [last_id]
        else:
            last_active, moved, lags, positions, ids = now, False, [lag], [position], [last_id]
        if moved or pid in alive or (lag is not None and lag <= allowed):
            last_active = now
        if pid != len(g_new):
            g_new.extend([None] * (pid - len(g_new)))
        g_new.append([last_active, pending, lags, positions, ids])
        count += 1
        full += len(lags) >= size
        status, reason = _rules(
            [*lags[:-1], None] if topic_error else lags,
            positions,
            topic_error,
            part.lag_reason if lag is None else "",
            th,
            int(last_active),
            now,
            ids=ids,
        )
        part.status, part.status_reason = status, reason
        severity = _SEVERITY[status]
        if severity > top_severity:
            top_severity, top = severity, (status, f"partition {pid}: {reason}")
    g_status, g_reason = _rolled_up(topic_error, top, (_UNKNOWN, "no partitions"))
    group.status, group.status_reason = g_status, g_reason
    # Burrow's completeness: the share of partitions whose window is full
    if count and full != count:
        group.complete = round(full / count, 4) if full else 0.0
    else:  # round() of a float is slow: whole windows or none (the usual case) need none
        group.complete = 1.0 if count else 0.0
    return g_new, g_status, g_reason


def _rolled_up(
    error: str | None, worst: tuple[Status, str] | None, empty: tuple[Status, str]
) -> tuple[Status, str]:
    """A group's or topic's status from its parts: an error when it cannot be read, else its
    first worst part's (status, reason naming the part), else ``empty`` (it has no parts)."""
    if error:
        return _ERR, f"cannot read: {error}"
    return worst if worst is not None else empty


def snapshot_enrich(
    snap: ClusterSnapshot,
    state: Mapping[str, Any],
    *,
    cluster: str,
    defaults: Thresholds,
    per_topic: Mapping[str, Mapping[str, Any]],
    dlq_window_ms: int,
) -> tuple[ClusterSnapshot, dict[str, Any]]:
    """Add statuses, window completeness and topic totals to ``snap`` (mutated and returned).

    Returns the next state: ``windows`` (topic -> group -> one entry per partition:
    ``[last_active_ms, pending, [lag, ...], [position, ...], [last_id, ...]]``,
    oldest sample first) and ``dlq`` (topic -> [[at, dlq_length], ...]); entities no
    longer seen are dropped. A position is ``entries-read`` when Redis knows it, else
    the last-delivered id. Each group gets ``complete``: the share (0..1) of its
    partitions whose window holds ``window_samples`` samples.
    """
    now = snap.taken_at_ms
    old_windows: Mapping[str, Any] = state.get("windows") or {}
    old_dlq: Mapping[str, Any] = state.get("dlq") or {}
    windows: dict[str, Any] = {}
    dlq_hist: dict[str, Any] = {}
    snap.cluster = cluster
    for topic in snap.topics:
        name = topic.topic
        th = thresholds_for(name, defaults=defaults, per_topic=per_topic) if per_topic else defaults
        alive = _alive_map(topic, th.stop_after_ms)
        topic_error = topic.error
        error_text = topic_error or None
        t_old = old_windows.get(name)
        if not isinstance(t_old, dict):  # first pass, or state of an older format
            t_old = {}
        t_new: dict[str, list[Any]] = {}
        windows[name] = t_new
        groups = topic.groups
        top_severity, top = -1, None  # the first worst group
        for group in groups:
            gname = group.group
            g_old = t_old.get(gname)
            t_new[gname], g_status, g_reason = _group_status(
                group,
                g_old if isinstance(g_old, list) else [],
                error_text,
                alive.get(gname) or _NO_PARTITIONS,
                th,
                now,
            )
            severity = _SEVERITY[g_status]
            if severity > top_severity:
                top_severity, top = severity, (g_status, f"group {gname}, {g_reason}")
        t_status, t_reason = _rolled_up(topic_error, top, (_OK, "no consumer groups"))
        topic.status, topic.status_reason = t_status, t_reason
        topic.lag, topic.lag_ms, topic.pending, topic.oldest_pending_ms = topic_totals(groups)
        hist, growth = dlq_history_step(
            old_dlq.get(name) or (), now, topic.dlq_length, dlq_window_ms
        )
        dlq_hist[name] = hist
        topic.dlq_growth = growth
    return snap, {"windows": windows, "dlq": dlq_hist}


def dlq_history_step(
    history: Sequence[Sequence[int]], now_ms: int, length: int, window_ms: int
) -> tuple[list[list[int]], int | None]:
    """Append (now, length) sparsely and return the growth vs about ``window_ms`` ago.

    Points are kept at least ``window_ms / 10`` apart, plus one older than the
    window, so the state stays a dozen points per topic.
    """
    cut = now_ms - window_ms
    last_old: list[int] | None = None  # the newest point older than the window
    recent: list[list[int]] = []
    point = None
    for point in history:
        a, b = point
        if type(point) is not list or type(a) is not int or type(b) is not int:
            point = [int(a), int(b)]  # else shared: state is read-only below its top level
        if point[0] <= cut:
            last_old = point
        else:
            recent.append(point)
    growth = length - last_old[1] if last_old is not None else None
    if point is None or now_ms - point[0] >= max(1, window_ms // 10):
        if now_ms <= cut:
            last_old = [now_ms, length]
        else:
            recent.append([now_ms, length])
    if last_old is not None:
        recent.insert(0, last_old)
    return recent, growth
