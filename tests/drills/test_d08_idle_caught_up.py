"""Drill 8: a caught-up group on an idle topic for longer than the stop threshold: never STOP.

Nothing is produced for twice the stop threshold (the window's span, 5 passes): the group
has no lag, so it is OK at every pass, with or without its consumer, and no alert opens.
"""

from __future__ import annotations

import pytest

from mqcore.topics import Topics
from tests.drills.harness import Drill, send, wait_for

pytestmark = [pytest.mark.redis, pytest.mark.drills, pytest.mark.django_db]


def test_idle_caught_up_group_stays_ok(drill: Drill) -> None:
    Topics(drill.config).create("orders", 2)
    consumer = drill.consumer("orders")
    send(drill.config, "orders", 20)
    client = drill.config.client()
    try:
        wait_for(lambda: client.llen("drill:sink:orders") == 20, what="the 20 handled")
    finally:
        client.close()
    drill.warm_up(1)
    drill.inject()
    for _ in range(10):  # twice the stop threshold, the consumer idle
        drill.collect()
    consumer.stop()
    for _ in range(3):  # and without it
        drill.collect()
    assert set(drill.seen("orders")) == {"OK"}
    assert set(drill.partition_statuses("orders", "default-group").values()) == {"OK"}
    assert drill.gauge("lag", "orders", 0) == 0
    assert not drill.timeline(topic="orders", kind="status")
    drill.detected("8 idle caught-up group", "no signal: OK at all 13 passes, never STOP", None)
    drill.assert_only_alerts()
