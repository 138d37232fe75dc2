"""Redis health in the console: memory, eviction policy, persistence, clients, the slow log,
and alerts on a policy that can evict streams, from a real redis-server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from django.test import Client

from dashboard.alerts import AlertThresholds, alert_conditions
from mqcore.admin.probes import redis_health
from tests.integration.dlq_support import role_user

pytestmark = [pytest.mark.redis, pytest.mark.django_db]


@pytest.fixture
def lru(r: redis.Redis) -> Iterator[None]:
    r.config_set("maxmemory-policy", "allkeys-lru")
    r.config_set("slowlog-log-slower-than", 0)
    try:
        yield
    finally:
        r.config_set("maxmemory-policy", "noeviction")
        r.config_set("slowlog-log-slower-than", 10000)
        r.slowlog_reset()


def test_health_numbers_and_eviction_alert(r: redis.Redis, lru: None) -> None:
    r.set("<script>alert(1)</script>", "x")
    h = redis_health(r)
    assert h["version"]
    assert h["used_memory"] > 0
    assert (h["maxmemory_policy"], h["evicting_policy"]) == ("allkeys-lru", True)
    assert h["appendfsync"] in ("everysec", "always", "no")
    assert any(e["keys"] == ["<script>alert(1)</script>"] for e in h["slowlog"])
    conditions = alert_conditions(None, {"redis": h}, AlertThresholds())
    assert [(c.rule, c.severity) for c in conditions] == [("redis_eviction", "warning")]
    full = alert_conditions(None, {"redis": {**h, "memory_share": 0.95}}, AlertThresholds())
    assert {c.rule for c in full} == {"redis_eviction", "redis_memory"}


def test_collectors_page_and_api_show_it(r: redis.Redis, lru: None, console_r: redis.Redis) -> None:
    from dashboard.clusters import console_keys, console_redis
    from dashboard.collectors.passes import collect_cluster
    from dashboard.store import ConsoleStore

    r.slowlog_reset()
    r.set("<script>alert(1)</script>", "x")
    r.config_set("slowlog-log-slower-than", 10000)  # the pass's own commands stay out
    store = ConsoleStore(console_redis(), console_keys())
    collect_cluster("default", claim=False, store=store)
    client = Client()
    client.force_login(role_user("vic", "Viewer"))
    api = client.get("/api/v1/collectors").json()
    row = api["collectors"][0] if isinstance(api, dict) else api[0]
    assert row["redis"]["maxmemory_policy"] == "allkeys-lru"
    page = client.get("/collectors/").content.decode()
    assert "can be evicted, messages and all" in page
    assert "<script>alert(1)</script>" not in page  # a key of no topic is counted, not named
    assert "key hidden" in page
    alerts = [a["rule"] for a in store.alerts_list(["default"])]
    assert "redis_eviction" in alerts
