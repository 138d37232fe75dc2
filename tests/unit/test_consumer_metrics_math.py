"""Consumer metrics without Redis: histogram buckets, percentiles, windows, odd fields."""

from __future__ import annotations

import pytest

from mqcore.consumer_metrics import BUCKETS_MS, ConsumerWindow, Tally, window_plan


def test_tally_buckets_are_upper_bounds() -> None:
    tally = Tally()
    for ms in (0.05, 0.1, 0.11, 10_000, 20_000):
        tally.handled(ms, failed=ms > 1000)
    assert tally.buckets[0] == 2  # <= 0.1 ms
    assert tally.buckets[1] == 1  # (0.1, 0.25]
    assert tally.buckets[len(BUCKETS_MS) - 1] == 1  # (5 s, 10 s]
    assert tally.buckets[len(BUCKETS_MS)] == 1  # over 10 s
    assert tally.counts == {"p": 5, "f": 2, "r": 0, "d": 0}
    assert tally.due(force=True)
    assert not Tally().due(force=True)  # nothing counted: nothing to send


def test_percentiles_interpolate_within_a_bucket() -> None:
    w = ConsumerWindow("c")
    assert w.percentile(0.5) is None
    w.buckets[BUCKETS_MS.index(10)] = 100  # all in (5, 10] ms
    assert w.percentile(0.5) == pytest.approx(7.5)
    assert w.percentile(0.99) == pytest.approx(9.95)
    w.buckets[-1] = 1000  # most over the last bound: that bound
    assert w.percentile(0.99) == BUCKETS_MS[-1]


def test_windows_and_odd_fields() -> None:
    step, slots, seconds = window_plan("7d", 3600 * 1000 + 5)
    assert (step, len(slots), seconds, slots[-1]) == ("h", 168, 3600, 1000)
    assert window_plan("1h", 120.0)[1][-1] == 2
    with pytest.raises(ValueError, match="window"):
        window_plan("1y", 0)
    w = ConsumerWindow("c")
    for counter in ("b99", "bx", "zz", "p"):
        w.add(1, counter, 3)
    assert w.counts["processed"] == 3
    assert sum(w.buckets) == 0
