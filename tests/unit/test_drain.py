"""Time to drain: no estimate while not draining by status, a range when the rate is noisy."""

import pytest

from dashboard.status import Status
from dashboard.status.drain import drain_estimate


@pytest.mark.parametrize(
    ("lag", "state", "seconds"),
    [
        ([], "unknown", None),
        ([(0, 10.0), (60_000, 0.0)], "drained", 0.0),
        ([(0, 100.0), (10_000, 90.0)], "unknown", None),  # too short a span
        ([(0, 300.0), (60_000, 200.0), (120_000, 100.0)], "draining", 60.0),
        ([(0, 100.0), (60_000, 150.0), (120_000, 200.0)], "growing", None),
        ([(0, 100.0), (60_000, 100.0), (120_000, 100.0)], "flat", None),
    ],
)
def test_drain_estimate(lag, state, seconds) -> None:
    drain = drain_estimate(lag)
    assert drain.state == state
    if seconds is None:
        assert drain.seconds is None
    else:
        assert drain.seconds == pytest.approx(seconds)
    assert drain.reason


def test_drain_estimate_uses_the_current_lag() -> None:
    falling = [(0, 300.0), (60_000, 200.0), (120_000, 100.0)]
    assert drain_estimate(falling, current=0).state == "drained"
    assert drain_estimate(falling, current=50).seconds == pytest.approx(30.0)
    assert drain_estimate([], current=0).state == "drained"


@pytest.mark.parametrize("status", [Status.STOP, Status.STALL, Status.REWIND, "STOP"])
def test_no_estimate_while_not_draining(status) -> None:
    falling = [(0, 300.0), (60_000, 200.0), (120_000, 100.0)]
    drain = drain_estimate(falling, current=100, status=status)
    assert (drain.state, drain.seconds) == ("not-draining", None)
    assert "not draining" in drain.reason
    # caught up wins over the status: nothing left to drain
    assert drain_estimate(falling, current=0, status=status).state == "drained"


def test_a_steady_rate_gives_one_number() -> None:
    falling = [(t * 10_000, 1000.0 - t * 10.0) for t in range(13)]
    drain = drain_estimate(falling, status=Status.OK)
    assert drain.seconds == pytest.approx(880.0)
    assert drain.low_s == pytest.approx(880.0)
    assert not drain.ranged


def test_a_noisy_rate_gives_a_range_around_the_estimate() -> None:
    noise = [0, 60, -50, 40, -70, 55, -45, 65, -60, 50, -40, 70, -55]
    falling = [(t * 10_000, 1000.0 - t * 10.0 + noise[t]) for t in range(13)]
    drain = drain_estimate(falling, current=880.0, status=Status.WARN)
    assert drain.ranged
    assert drain.low_s is not None
    assert drain.seconds is not None
    assert drain.low_s < drain.seconds
    assert drain.high_s is None or drain.high_s > drain.seconds


def test_a_rate_that_may_be_zero_has_no_upper_bound() -> None:
    noise = [0, 300, -300, 250, -280, 310, -260, 0]
    falling = [(t * 10_000, 1000.0 - t * 5.0 + noise[t]) for t in range(8)]
    drain = drain_estimate(falling, current=965.0)
    assert drain.state == "draining"
    assert drain.high_s is None
    assert drain.ranged
