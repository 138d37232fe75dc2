"""Consumer health after Burrow: pure rules over the last N samples of each partition.

Nothing here does I/O. The collector keeps a small window of samples per
(topic, group, partition) in the console store; :mod:`dashboard.status.enrich`
applies :func:`_rules` to each window (:func:`partition_status` does the same
over :class:`Sample` rows) and takes the worst status up to the group and the topic.

Rules, first match wins (Burrow's order; docs/operators.md has an example of each):
- ERR: the partition (or its topic) could not be read.
- UNKNOWN: the latest lag is NULL and no fallback count could tell.
- OK: the latest lag is within the allowed lag.
- STOP: no consumer activity (position moved, acks, a live lease owner or
  consumer) and no sample within the allowed lag for longer than ``stop_after_ms``;
  checked before the zero-lag rule, so a consumer that stopped while caught up
  goes STOP once lag appears and nothing moves (Burrow #290).
- REWIND: the position went back (entries-read decreased, or the last-delivered
  id went to an older id) and no later sample of the window came back to it.
- OK: lag within the allowed lag at some sample of the window (Burrow rule 1).
- WARN: the position did not move over a window that is not full yet (the first passes
  of a partition): no status from an incomplete window is worse than WARN unless its rule
  is certain, as STOP (by time) and REWIND (by position) are.
- STALL: the position did not move over the whole (full) window.
- WARN: the position moves but lag grew at every step of a full window (unknown
  lags skipped).
- OK otherwise (moving, lag not growing steadily).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from mqcore.models import Status

__all__ = [
    "WORST_FIRST",
    "Sample",
    "Status",
    "Thresholds",
    "partition_status",
    "status_parse",
    "thresholds_for",
    "worst",
]


_SEVERITY = {status: status.severity for status in Status}
WORST_FIRST: tuple[Status, ...] = tuple(sorted(Status, key=_SEVERITY.__getitem__, reverse=True))
_VALUE = {s: s.value for s in Status}
# the members as globals for the code run per partition: attribute access on an enum class
# goes through its metaclass's lookup hook, five times the cost of a global
_OK, _UNKNOWN, _WARN, _REWIND = Status.OK, Status.UNKNOWN, Status.WARN, Status.REWIND
_STALL, _STOP, _ERR = Status.STALL, Status.STOP, Status.ERR


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
    position: int | str  # entries-read when Redis knows it, else the last-delivered id
    pending: int
    alive: bool = False  # a live lease owner or consumer was seen at this sample
    error: str | None = None
    lag_reason: str = ""
    last_id: str = ""  # the last-delivered id; REWIND watches it beside entries-read


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
    """Status and the rule that fired, for samples oldest first (the window is the last ones).

    ``last_active_ms`` is the last activity the caller saw before ``samples``; the
    samples add theirs (position moved, pending shrank, alive, lag within allowed).
    """
    if not samples:
        return Status.UNKNOWN, "no samples yet"
    history = list(samples)
    window = history[-thresholds.window_samples :]
    latest = window[-1]
    last_active = last_active_ms
    for prev, cur in zip([None, *history], history, strict=False):
        moved = prev is not None and (cur.position != prev.position or cur.pending < prev.pending)
        if moved or cur.alive or _caught_up(cur.lag, thresholds.allowed_lag):
            last_active = max(last_active, cur.at_ms)
    return _rules(
        [s.lag for s in window],
        [s.position for s in window],
        latest.error,
        latest.lag_reason,
        thresholds,
        last_active,
        now_ms,
        ids=[s.last_id for s in window] if all(s.last_id for s in window) else [],
    )


def _caught_up(lag: int | None, allowed: int) -> bool:
    return lag is not None and lag <= allowed


def _order(position: object) -> tuple[int, int, int] | None:
    """A position as a sortable key: entries-read ``(0, n, 0)``, a stream id ``(1, ms, seq)``."""
    if isinstance(position, int):
        return (0, position, 0)
    ms, dash, seq = str(position).partition("-")
    if ms.isdigit() and (seq.isdigit() if dash else True):
        return (1, int(ms), int(seq)) if dash else (0, int(ms), 0)
    return None


def _rewind(series: Sequence[object]) -> tuple[object, object] | None:
    """(before, after) of a step back that no later position made up (Burrow rule 2), else None.

    Only positions of one kind are compared (entries-read with entries-read, id with id).
    """
    # fast paths (every partition, every pass): a window that never moved, entries-read
    # that never went down, ids of the same digit counts (text order is id order) in order
    if not series:
        return None
    first = series[0]
    if series.count(first) == len(series):
        return None
    if type(first) is str:
        size, dash, before = len(first), first.find("-"), first
        for text in series:
            if type(text) is not str or len(text) != size or text.find("-") != dash:
                break
            if text < before:
                break
            before = text
        else:
            return None
    elif type(first) is int:
        numbers: Any = series
        try:  # numbers only (a number and a text do not compare): do they never go down?
            if sorted(numbers) == numbers:
                return None
        except TypeError:
            pass
    keys = [_order(p) for p in series]
    for i, (a, b) in enumerate(pairwise(keys), start=1):
        if a is None or b is None or a[0] != b[0] or b >= a:
            continue
        if not any(k is not None and k[0] == a[0] and k >= a for k in keys[i:]):
            return series[i - 1], series[i]
    return None


def _rules(
    lags: Sequence[int | None],
    positions: Sequence[object],
    error: str | None,
    lag_reason: str,
    thresholds: Thresholds,
    last_active_ms: int,
    now_ms: int,
    *,
    ids: Sequence[str] = (),
) -> tuple[Status, str]:
    """The rules of the module docstring over one window (oldest first), first match wins.

    ``last_active_ms`` is the last time the partition was active or caught up; ``ids``
    the last-delivered ids beside ``positions`` when those are entries-read.
    """
    latest, n, allowed = lags[-1], len(lags), thresholds.allowed_lag
    if error:
        return _ERR, f"cannot read: {error}"
    if latest is None:
        return _UNKNOWN, f"lag unknown: {lag_reason or 'Redis reports no lag'}"
    if latest <= allowed:
        return _OK, f"lag {latest} within allowed {allowed}"
    inactive_ms = now_ms - last_active_ms
    if inactive_ms > thresholds.stop_after_ms:
        return (
            _STOP,
            f"no consumer activity for {inactive_ms // 1000} s"
            f" (> {thresholds.stop_after_ms // 1000} s) since it last moved or was caught up;"
            f" lag is {latest}",
        )
    # a position that did not move over the window went nowhere back (and is STALL below)
    still = bool(positions) and positions.count(positions[-1]) == len(positions)
    back = (None if still else _rewind(positions)) or _rewind(ids)
    if back:
        return (
            _REWIND,
            f"position went back from {back[0]} to {back[1]} and has not come back"
            f" within the last {n} samples (lag {latest})",
        )
    if lags.count(latest) != n:  # else every sample's lag is the latest, above the allowed
        for was in reversed(lags):
            if was is not None and was <= allowed:
                return _OK, f"lag was {was} (<= {allowed}) within the last {n} samples"
    if n < 2:
        return _OK, "one sample so far; the rules need two"
    if still and n < thresholds.window_samples:  # not certain yet: no worse than WARN
        return (
            _WARN,
            f"position not moving over {n} samples while lag is {latest}"
            f" (the window of {thresholds.window_samples} is not full yet)",
        )
    if still:
        return _STALL, f"position not moving over {n} samples while lag is {latest}"
    known = [lag for lag in lags if lag is not None]
    if n >= thresholds.window_samples and len(known) > 1 and all(b > a for a, b in pairwise(known)):
        return (
            _WARN,
            f"consumer moving but lag grew at every sample ({known[0]} -> {latest})",
        )
    return _OK, f"consumer moving (lag {latest})"
