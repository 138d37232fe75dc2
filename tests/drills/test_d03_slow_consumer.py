"""Drill 3: a consumer slower than the produce rate: WARN.

30 messages a second against a consumer that handles 20: its position moves, but the lag
grows at every pass, so the group goes WARN once a full window (5 samples) shows it, and the
status alert (a warning) opens after its hold. When the producers stop, the consumer
drains the backlog: OK, and the alert resolves.
"""

from __future__ import annotations

import pytest

from mqcore.topics import Topics
from tests.drills.harness import Drill

pytestmark = [pytest.mark.redis, pytest.mark.drills, pytest.mark.django_db]

ALERT = "status:orders/default-group"


def test_slow_consumer_is_warn(drill: Drill) -> None:
    Topics(drill.config).create("orders", 1)
    drill.consumer("orders", handle_ms=50, batch=5)  # about 20 a second
    drill.warm_up(3)
    assert drill.status("orders") == "OK"

    producer = drill.producer("orders", rate=30)
    drill.inject()
    passes = drill.until("WARN", lambda: drill.status("orders") == "WARN", max_passes=9)
    assert passes <= 6  # a full window of growing lag, then the pass that completes it
    drill.detected("3 slow consumer", "group WARN", passes)
    assert set(drill.seen("orders")) <= {"OK", "WARN"}  # never STALL or STOP: it moves
    opened = drill.until("status alert", lambda: ALERT in drill.opened(), max_passes=4)
    at_default = drill.first("orders", {"WARN"}) * 10 + 300
    drill.detected("3 slow consumer", "status alert (warning)", opened, default_s=at_default)
    assert drill.receiver.alert(ALERT)["severity"] == "warning"
    assert "lag grew" in drill.receiver.alert(ALERT)["message"]
    assert drill.metric("opsdash_alerts_open", rule="status", severity="warning") == 1
    lag = drill.gauge("lag", "orders", 0)
    assert lag is not None
    assert lag > 0
    texts = [e["text"] for e in drill.timeline(topic="orders", kind="status")]
    assert any(t.startswith("group default-group: status OK → WARN") for t in texts), texts

    producer.stop()
    drill.until("OK", lambda: drill.status("orders") == "OK", max_passes=10)
    drill.until("resolved", lambda: ALERT in drill.resolved(), max_passes=2)
    drill.assert_only_alerts(ALERT)
