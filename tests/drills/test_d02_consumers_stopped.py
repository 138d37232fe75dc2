"""Drill 2: every consumer of a group stopped while producers continue: STOP.

The group goes STALL once its position has not moved over a full window (5 passes), then
STOP once nothing moved for longer than the window's span; the status alert opens after its
hold time (compressed to 2 s; 300 s by default) and names STOP. A consumer started again
drains the backlog: OK, and the alert resolves.
"""

from __future__ import annotations

import pytest

from mqcore.topics import Topics
from tests.drills.harness import Drill

pytestmark = [pytest.mark.redis, pytest.mark.drills, pytest.mark.django_db]

ALERT = "status:orders/default-group"


def test_all_consumers_stopped_is_stop(drill: Drill) -> None:
    Topics(drill.config).create("orders", 2)
    drill.producer("orders", rate=20)
    consumer = drill.consumer("orders")
    drill.warm_up()
    assert drill.status("orders") == "OK"

    consumer.stop()  # SIGTERM: a clean stop, its leases released
    drill.inject()
    stop = drill.until("STOP", lambda: drill.status("orders") == "STOP", max_passes=9)
    assert stop <= 7  # the window's span (5 passes), then the pass that is past it
    drill.detected("2 all consumers stopped", "group STOP", stop)
    assert drill.partition_statuses("orders", "default-group") == {0: "STOP", 1: "STOP"}
    assert set(drill.seen("orders")) <= {"OK", "STALL", "STOP"}
    opened = drill.until("status alert", lambda: ALERT in drill.opened(), max_passes=4)
    bad = drill.first("orders", {"STALL", "STOP"})
    at_default = bad * 10 + 300  # the hold (300 s) from the first bad status
    drill.detected("2 all consumers stopped", "status alert", opened, default_s=at_default)
    assert "STOP" in drill.receiver.alert(ALERT)["message"] or drill.status("orders") == "STOP"
    assert drill.metric("opsdash_alerts_open", rule="status", severity="critical") == 1
    texts = [e["text"] for e in drill.timeline(topic="orders")]
    assert "group default-group: status STALL → STOP" in texts
    assert any(t.endswith(" left") and consumer.name in t for t in texts)

    drill.consumer("orders")  # recovery: a consumer again
    drill.until("OK", lambda: drill.status("orders") == "OK", max_passes=10)
    drill.until("resolved", lambda: ALERT in drill.resolved(), max_passes=2)
    assert drill.metric("opsdash_alerts_open", rule="status", severity="critical") is None
    drill.assert_only_alerts(ALERT)
