"""Consumer health after Burrow: pure rules over the last N samples of each partition.

Nothing here does I/O. The collector keeps a small window of samples per
(topic, group, partition) in the console store, hands it to :func:`partition_status`
and takes the worst status up to the group and the topic. :func:`snapshot_enrich`
turns one ``ClusterSnapshot`` (as a dict) plus the previous window state into the
stored snapshot and the next window state.

Rules, first match wins:
- ERR: the partition (or its topic) could not be read.
- UNKNOWN: lag is NULL and no fallback count could tell.
- OK: lag within the allowed lag at some sample of the window (Burrow rule 1).
- STOP: lag > 0 and no consumer activity (position moved, acks, a live lease
  owner or consumer) for longer than ``stop_after_ms``.
- STALL: lag > 0 and the position did not move over the whole window.
- WARN: the position moves but lag grew at every step of a full window.
- OK otherwise (moving, lag not growing steadily).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from itertools import pairwise
from typing import Any

from mqcore.lag import topic_totals

__all__ = [
    "WORST_FIRST",
    "Sample",
    "Status",
    "Thresholds",
    "partition_status",
    "snapshot_enrich",
    "status_parse",
    "thresholds_for",
    "worst",
]


class Status(StrEnum):
    """Health of a partition, group or topic, declared from best to worst.

    The declaration order is the severity: every ordering of statuses in the
    console (worst-of roll-ups, the overview's status sort and counts) derives
    from it through :attr:`severity`, :func:`worst` and :data:`WORST_FIRST`.
    """

    OK = "OK"  # caught up, or catching up
    UNKNOWN = "UNKNOWN"  # Redis cannot tell the lag
    WARN = "WARN"  # moving, but lag grows at every sample
    STALL = "STALL"  # position not moving while lag > 0
    STOP = "STOP"  # no consumer activity longer than the window while lag > 0
    ERR = "ERR"  # the collector cannot read it

    @property
    def severity(self) -> int:
        """0 for OK, growing with each worse status."""
        return _SEVERITY[self]


_SEVERITY = {status: rank for rank, status in enumerate(Status)}
WORST_FIRST: tuple[Status, ...] = tuple(sorted(Status, key=_SEVERITY.__getitem__, reverse=True))
_VALUE = {s: s.value for s in Status}


@dataclass(frozen=True, slots=True)
class Thresholds:
    """Per-topic knobs of the rules (settings STATUS_* and STATUS_TOPIC_THRESHOLDS)."""

    window_samples: int = 5
    allowed_lag: int = 0
    stop_after_ms: int = 50_000


@dataclass(frozen=True, slots=True)
class Sample:
    """One observation of a partition for one group."""

    at_ms: int
    lag: int | None
    position: str  # entries-read when Redis knows it, else the last-delivered id
    pending: int
    alive: bool = False  # a live lease owner or consumer was seen at this sample
    error: str | None = None
    lag_reason: str = ""


def worst(statuses: Sequence[Status]) -> Status:
    """The most severe of ``statuses``; OK when there are none."""
    return max(statuses, key=_SEVERITY.__getitem__, default=Status.OK)


def status_parse(value: Any) -> Status:
    """The status named by ``value`` (any case); UNKNOWN for anything else, None included."""
    try:
        return Status(str(value or Status.UNKNOWN.value).upper())
    except ValueError:
        return Status.UNKNOWN


def thresholds_for(
    topic: str,
    *,
    defaults: Thresholds,
    per_topic: Mapping[str, Mapping[str, Any]],
) -> Thresholds:
    """Defaults overridden by ``per_topic[topic]``: window_samples, allowed_lag, stop_after_s."""
    over = per_topic.get(topic)
    if not over:
        return defaults
    stop_ms = defaults.stop_after_ms
    if "stop_after_s" in over:
        stop_ms = int(float(over["stop_after_s"]) * 1000)
    return Thresholds(
        window_samples=max(1, int(over.get("window_samples", defaults.window_samples))),
        allowed_lag=max(0, int(over.get("allowed_lag", defaults.allowed_lag))),
        stop_after_ms=stop_ms,
    )


def partition_status(
    samples: Sequence[Sample], thresholds: Thresholds, *, last_active_ms: int, now_ms: int
) -> tuple[Status, str]:
    """Status and the rule that fired, for samples oldest first (the window).

    ``last_active_ms`` is the last time any consumer activity was seen for the
    partition; the caller tracks it beyond the window.
    """
    if not samples:
        return Status.UNKNOWN, "no samples yet"
    window = list(samples)[-thresholds.window_samples :]
    latest = window[-1]
    return _rules(
        [s.lag for s in window],
        [s.position for s in window],
        latest.error,
        latest.lag_reason,
        thresholds,
        last_active_ms,
        now_ms,
    )


def _rules(
    lags: list[int | None],
    positions: list[str],
    error: str | None,
    lag_reason: str,
    thresholds: Thresholds,
    last_active_ms: int,
    now_ms: int,
) -> tuple[Status, str]:
    """The rules of :func:`partition_status` over a window's lags and positions (oldest first)."""
    latest = lags[-1]
    if error:
        return Status.ERR, f"cannot read: {error}"
    if latest is None:
        return Status.UNKNOWN, f"lag unknown: {lag_reason or 'Redis reports no lag'}"
    allowed = thresholds.allowed_lag
    n = len(lags)
    for i in range(n - 1, -1, -1):
        lag = lags[i]
        if lag is not None and lag <= allowed:
            if i == n - 1:
                return Status.OK, f"lag {latest} within allowed {allowed}"
            return Status.OK, f"lag was {lag} (<= {allowed}) within the last {n} samples"
    inactive_ms = now_ms - last_active_ms
    if inactive_ms > thresholds.stop_after_ms:
        return (
            Status.STOP,
            f"no consumer activity for {inactive_ms // 1000} s"
            f" (> {thresholds.stop_after_ms // 1000} s) while lag is {latest}",
        )
    if n < 2:
        return Status.OK, "one sample so far; the rules need two"
    last_pos = positions[-1]
    if all(p == last_pos for p in positions):
        return Status.STALL, f"position not moving over {n} samples while lag is {latest}"
    if n >= thresholds.window_samples and all(
        a is not None and b is not None and b > a for a, b in pairwise(lags)
    ):
        return (
            Status.WARN,
            f"consumer moving but lag grew at every sample ({lags[0]} -> {latest})",
        )
    return Status.OK, f"consumer moving (lag {latest})"


# --- snapshot enrichment -------------------------------------------------------


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
    return alive


def snapshot_enrich(
    snap: dict[str, Any],
    state: Mapping[str, Any],
    *,
    cluster: str,
    defaults: Thresholds,
    per_topic: Mapping[str, Mapping[str, Any]],
    dlq_window_ms: int,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Add statuses and topic totals to ``snap`` (mutated and returned) and return the next state.

    ``state`` holds ``windows`` (topic -> group -> one entry per partition:
    ``[last_active_ms, pending, [lag, ...], [position, ...]]``, oldest sample first)
    and ``dlq`` (topic -> [[at, dlq_length], ...]); entities no longer seen are dropped.
    A position is ``entries-read`` when Redis knows it, else the last-delivered id.
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
        size = th.window_samples
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
            gname = group["group"]
            part_results: list[tuple[Status, str, int]] = []
            g_old = t_old.get(gname)
            if not isinstance(g_old, list):
                g_old = []
            g_new: list[Any] = []
            t_new[gname] = g_new
            for part in group.get("partitions") or []:
                pid = int(part["partition"])
                prev = g_old[pid] if pid < len(g_old) else None
                entries_read = part.get("entries_read")
                position = (
                    entries_read if entries_read is not None else str(part["last_delivered_id"])
                )
                pending = part.get("pending") or 0
                lag = part.get("lag")
                if prev:
                    last_active, prev_pending, lags, positions = prev
                    moved = positions[-1] != position or pending < (prev_pending or 0)
                    lags = [*lags[1 - size :], lag] if size > 1 else [lag]
                    positions = [*positions[1 - size :], position] if size > 1 else [position]
                else:
                    last_active, moved, lags, positions = now, False, [lag], [position]
                if moved or alive.get((gname, pid), False):
                    last_active = now
                while len(g_new) < pid:
                    g_new.append(None)
                g_new.append([last_active, pending, lags, positions])
                if topic_error:
                    lags = [*lags[:-1], None]
                status, reason = _rules(
                    lags,
                    positions,
                    error_text,
                    (part.get("lag_reason") or "") if lag is None else "",
                    th,
                    int(last_active),
                    now,
                )
                part["status"], part["status_reason"] = _VALUE[status], reason
                part_results.append((status, reason, pid))
            if topic_error:
                g_status, g_reason = Status.ERR, f"cannot read: {topic_error}"
            elif part_results:
                top = max(part_results, key=lambda r: r[0].severity)
                g_status, g_reason = top[0], f"partition {top[2]}: {top[1]}"
            else:
                g_status, g_reason = Status.UNKNOWN, "no partitions"
            group["status"], group["status_reason"] = g_status.value, g_reason
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
