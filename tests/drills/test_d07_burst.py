"""Drill 7: a producer burst of 20x for 6 s (60 s at the default interval), consumers keeping
up afterwards: at most a WARN that closes, and no alert.

5 messages a second, then 100 a second for 6 s, against a consumer that handles about 60: the
lag builds while the burst lasts and drains within seconds after. The status alert's hold
keeps its default in passes here (30 s: 300 s at the default interval), since the question
is whether a burst that size pages anyone: it must not.
"""

from __future__ import annotations

import time

import pytest

from mqcore.topics import Topics
from tests.drills.harness import Drill

pytestmark = [pytest.mark.redis, pytest.mark.drills, pytest.mark.django_db]


def test_burst_then_keeping_up_raises_no_alert(drill: Drill, settings: object) -> None:
    settings.ALERT_STATUS_FOR_S = 30  # type: ignore[attr-defined]
    Topics(drill.config).create("orders", 1)
    drill.consumer("orders", handle_ms=15, batch=20)
    base = drill.producer("orders", rate=5)
    drill.warm_up(3)
    assert drill.status("orders") == "OK"

    burst = drill.producer("orders", rate=95, name="burst")  # 100 a second with the base
    drill.inject()
    ends = time.monotonic() + 6
    while time.monotonic() < ends:
        drill.collect()
    burst.stop()
    peak = drill.gauge("lag", "orders", 0)
    assert peak is not None
    assert peak > 100
    drill.until(
        "drained", lambda: drill.status("orders") == "OK" and lag(drill) < 20, max_passes=10
    )
    for _ in range(2):
        drill.collect()
    seen = drill.seen("orders")
    assert set(seen) <= {"OK", "WARN"}, seen
    assert seen[-3:] == ["OK"] * 3
    if "WARN" in seen:
        warned = seen.index("WARN") + 1
        warns = seen.count("WARN")
        drill.detected("7 burst 20x", f"WARN (for {warns} passes; no alert)", warned)
    else:
        drill.detected("7 burst 20x", "no signal: OK throughout", None)
    assert base.sent > 0
    drill.assert_only_alerts()


def lag(drill: Drill) -> float:
    value = drill.gauge("lag", "orders", 0)
    return float("inf") if value is None else value
