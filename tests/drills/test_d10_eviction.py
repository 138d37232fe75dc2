"""Drill 10: Redis's eviction policy switched to ``allkeys-lru``: the ``redis_eviction`` alert.

The collector probes Redis's health once a minute (on the first pass of each minute, with
the memory samples), so the alert opens on the first pass of the next minute: up to a minute
and a pass after the switch, whatever the interval. Switched back to ``noeviction``, it
resolves on the next minute's probe. (This drill takes up to two minutes of wall time.)
"""

from __future__ import annotations

import pytest
import redis

from mqcore.topics import Topics
from tests.drills.harness import Drill

pytestmark = [pytest.mark.redis, pytest.mark.drills, pytest.mark.django_db]

ALERT = "redis_eviction:redis"


def test_eviction_policy_raises_redis_eviction(drill: Drill, r: redis.Redis) -> None:
    Topics(drill.config).create("orders", 1)
    drill.consumer("orders")
    drill.producer("orders", rate=5)
    drill.warm_up(2)
    try:
        r.config_set("maxmemory-policy", "allkeys-lru")
        drill.inject()
        passes = drill.until("redis_eviction", lambda: ALERT in drill.opened(), max_passes=63)
        # at the defaults, at worst a minute (the probe) and a pass
        signal = "redis_eviction alert (the minute's Redis probe)"
        drill.detected("10 eviction policy", signal, passes, default_s=60 + 10)
        alert = drill.receiver.alert(ALERT)
        assert alert["severity"] == "warning"  # nothing evicted yet
        assert "allkeys-lru" in alert["message"]
        assert drill.metric("opsdash_alerts_open", rule="redis_eviction", severity="warning") == 1
    finally:
        r.config_set("maxmemory-policy", "noeviction")
    drill.until("resolved", lambda: ALERT in drill.resolved(), max_passes=63)
    assert drill.metric("opsdash_alerts_open", rule="redis_eviction", severity="warning") is None
    assert set(drill.seen("orders")) == {"OK"}
    drill.assert_only_alerts(ALERT)
