"""Time to drain: when a group's lag reaches zero, from its status and its recent trend.

Pure: the caller passes the lag samples of a recent window (``(epoch_ms, lag)``), the
latest lag and the group's status. There is no estimate while the group is not
draining by its status (STOP, STALL, REWIND: a trend line through such a window
would promise a drain that is not happening). Otherwise the least-squares slope of
the lag gives the net drain rate, and its standard error a range: the point
estimate is shown when the rate is steady, the range when it is noisy, and only
a lower bound when the slowest plausible rate is not draining at all.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from dashboard.status.rules import Status

__all__ = ["NOT_DRAINING", "Drain", "drain_estimate"]

NOT_DRAINING = frozenset({Status.STOP, Status.STALL, Status.REWIND})
# half-width of the rate range, in standard errors of the slope (about 95 %)
SPREAD = 2.0
# a range narrower than this share of the estimate is shown as one number
STEADY = 0.25


@dataclass(frozen=True, slots=True)
class Drain:
    """A time-to-drain estimate: ``seconds`` (and its range) or a reason why there is none."""

    seconds: float | None  # the estimate at the fitted rate
    state: str  # "drained", "draining", "growing", "flat", "not-draining", "unknown"
    rate_per_s: float | None  # net change of lag per second (negative: draining)
    reason: str
    low_s: float | None = None  # at the fastest plausible rate
    high_s: float | None = None  # at the slowest plausible rate; None: no upper bound

    @property
    def ranged(self) -> bool:
        """True when the rate is too noisy for one number: show ``low_s`` to ``high_s``."""
        if self.seconds is None or self.state != "draining":
            return False
        if self.high_s is None or self.low_s is None:
            return True
        return (self.high_s - self.low_s) > STEADY * max(self.seconds, 1.0)


def drain_estimate(
    lag: Sequence[tuple[int, float]],
    *,
    current: float | None = None,
    status: Status | str | None = None,
    min_span_ms: int = 60_000,
) -> Drain:
    """Estimate when lag reaches 0 (see the module docstring).

    ``current`` (the latest snapshot's lag) overrides the last sample as the amount
    left. Needs at least two samples spanning ``min_span_ms``; never extrapolates
    a growing or flat lag into a time.
    """
    clean = [(t, v) for t, v in lag if math.isfinite(v)]
    if current is not None and math.isfinite(current) and current <= 0:
        return Drain(0.0, "drained", 0.0, "no lag", 0.0, 0.0)
    if status is not None and str(status) in NOT_DRAINING:
        return Drain(None, "not-draining", None, f"not draining: the group is {status}")
    if not clean:
        return Drain(None, "unknown", None, "no lag samples yet")
    if current is None or not math.isfinite(current):
        current = clean[-1][1]
    if current <= 0:
        return Drain(0.0, "drained", 0.0, "no lag", 0.0, 0.0)
    if len(clean) < 2 or clean[-1][0] - clean[0][0] < min_span_ms:
        return Drain(None, "unknown", None, "not enough history for a trend")
    n = len(clean)
    t0 = clean[0][0]
    xs = [(t - t0) / 1000.0 for t, _ in clean]
    ys = [v for _, v in clean]
    mx = sum(xs) / n
    my = sum(ys) / n
    var = sum((x - mx) ** 2 for x in xs)
    if var == 0:
        return Drain(None, "unknown", None, "not enough history for a trend")
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var
    if slope >= -1e-9 * max(1.0, abs(my)):
        state = "growing" if slope > 0 else "flat"
        return Drain(None, state, slope, f"lag is {state}: consumers are not catching up")
    spread = 0.0
    if n > 2:
        intercept = my - slope * mx
        residual = sum((y - (intercept + slope * x)) ** 2 for x, y in zip(xs, ys, strict=True))
        spread = SPREAD * math.sqrt(residual / (n - 2) / var)
    fastest, slowest = slope - spread, slope + spread
    return Drain(
        current / -slope,
        "draining",
        slope,
        "at the recent net drain rate",
        current / -fastest,
        current / -slowest if slowest < 0 else None,
    )
