"""Partition skew and per-topic memory on a real redis-server: the collector's per-partition
produced counters and rotating MEMORY USAGE samples, the topic page's partition panel, the
hot-key sample (htmx partial and API), the memory series and the memory_growth alert."""

from __future__ import annotations

import time

import pytest
import redis
from django.test import Client, override_settings

from dashboard.alerts import AlertThresholds, alert_conditions
from dashboard.clusters import console_keys, console_redis, console_store
from dashboard.collectors.passes import collect_cluster
from dashboard.store import ConsoleStore
from mqcore.admin.partitions import hot_keys
from mqcore.admin.probes import topic_memory
from mqcore.config import MQConfig
from mqcore.models import ClusterSnapshot
from tests.integration.dlq_support import make_topic, role_user
from tests.integration.pages_support import collect
from tests.snapshot_parts import snapshot_of

pytestmark = [pytest.mark.redis, pytest.mark.django_db]

T = "/clusters/default/topics/orders"
API = "/api/v1/clusters/default/topics/orders"


def fill(r: redis.Redis, cfg: MQConfig) -> None:
    """Partition 0 is hot (300 entries, mostly key "hot"); 1..3 hold 10 entries each."""
    pipe = r.pipeline(transaction=False)
    for i in range(300):
        key = "hot" if i % 10 else f"<b>k{i}</b>"
        pipe.xadd(cfg.keys.partition("orders", 0), {"payload": "x" * 50, "key": key})
    for p in (1, 2, 3):
        for i in range(10):
            pipe.xadd(cfg.keys.partition("orders", p), {"payload": "x", "key": f"k{i}"})
    pipe.xadd(cfg.keys.partition("orders", 1), {"payload": "no key"})
    pipe.execute()


def viewer() -> Client:
    client = Client()
    client.force_login(role_user("vic", "Viewer"))
    return client


def test_hot_keys_and_memory_reads_are_bounded(r: redis.Redis, mq_config: MQConfig) -> None:
    make_topic(mq_config, "orders", 4)
    fill(r, mq_config)
    sample = hot_keys(r, mq_config.keys, "orders", 0, count=100)
    assert sample["sampled"] == 100
    assert sample["keys"][0] == {"key": "hot", "count": 90, "share": 0.9}
    assert sample["distinct"] == 11
    assert hot_keys(r, mq_config.keys, "orders", 1, count=5)["keyless"] == 1
    small = hot_keys(r, mq_config.keys, "orders", 0, count=300, max_bytes=2000)
    assert small["bytes_bound"] is True
    assert 10 < small["sampled"] < 40  # about 2000 bytes of ~90-byte entries
    assert small["bytes_read"] < 2000 + 16 * 100
    sizes = topic_memory(r, mq_config.keys, [("orders", 5)], samples=5)["orders"]
    assert all(isinstance(s, int) and s > 0 for s in sizes[:4])
    assert sizes[4] is None  # no such stream
    assert sizes[0] > sizes[2]


def test_collector_pass_feeds_the_partition_panel_and_memory_series(
    r: redis.Redis, mq_config: MQConfig, console_r: redis.Redis
) -> None:
    make_topic(mq_config, "orders", 4)
    now = int(time.time() * 1000)
    zero = [("partition_produced_total", f"orders/{p}", 0.0) for p in range(4)]
    collect(points=zero, now_ms=now - 60_000)  # a sample a minute ago: nothing produced yet
    fill(r, mq_config)
    store = ConsoleStore(console_redis(), console_keys())
    collect_cluster("default", claim=False, store=store)
    snap = store.snapshot_get("default")
    assert snap is not None
    memory = snap.topics[0].memory
    assert memory is not None
    assert memory.bytes > 0
    assert len(memory.partitions) == 4
    assert console_store().series_get("default", "memory_bytes", "orders", since_ms=now - 60_000)
    client = viewer()
    api = client.get(f"{API}/partitions").json()
    assert api["collected"] is True
    assert [p["length"] for p in api["partitions"]] == [300, 11, 10, 10]
    assert api["skew"]["length"]["partition"] == 0
    assert api["skew"]["length"]["level"] == "hot"
    rate = api["skew"]["rate_per_s"]
    assert rate["partition"] == 0
    assert rate["level"] == "hot"
    assert 4.0 < rate["max"] <= 5.1  # 300 entries over about a minute
    assert api["partitions"][0]["hot_length"] is True
    assert api["memory"]["bytes"] == memory.bytes
    page = client.get(f"{T}/").content.decode()
    assert 'id="partition-skew"' in page
    assert 'data-skew="rate"' in page
    assert "Sample keys" in page
    assert 'data-chart="memory"' in page
    assert client.get(f"{API}/partitions?window=2d").status_code == 400


def test_hot_keys_partial_and_api(r: redis.Redis, mq_config: MQConfig) -> None:
    make_topic(mq_config, "orders", 4)
    fill(r, mq_config)
    client = viewer()
    part = client.get(f"{T}/partitions/0/hot-keys/?count=300", HTTP_HX_REQUEST="true")
    html = part.content.decode()
    assert part.status_code == 200
    assert "<h1>" not in html  # the htmx partial only
    assert "hot" in html
    assert "&lt;b&gt;k0&lt;/b&gt;" in html  # keys are escaped
    assert "<b>k0</b>" not in html
    full = client.get(f"{T}/partitions/0/hot-keys/").content.decode()
    assert "<h1>" in full
    api = client.get(f"{API}/partitions/0/hot-keys?count=50").json()
    assert api["sampled"] == 50
    assert api["keys"][0]["key"] == "hot"
    assert client.get(f"{API}/partitions/0/hot-keys?count=5000").status_code == 400
    assert client.get(f"{API}/partitions/9/hot-keys").status_code == 404
    assert client.get("/api/v1/clusters/default/topics/nope/partitions/0/hot-keys").status_code == (
        404
    )


@override_settings(MEMORY_PROBE_STREAMS=2)
def test_memory_probe_rotates_through_topics_within_its_budget(
    r: redis.Redis, mq_config: MQConfig, console_r: redis.Redis
) -> None:
    for name in ("alpha", "beta", "gamma"):
        make_topic(mq_config, name, 2)
        r.xadd(mq_config.keys.partition(name, 0), {"payload": "x"})
    store = ConsoleStore(console_redis(), console_keys())
    collect_cluster("default", claim=False, store=store)
    state = store.state_get("default")["state"]
    assert sorted(state["memory"]) == ["alpha"]  # one topic (2 streams) per minute
    assert state["memory_cursor"] == 1
    snap = store.snapshot_get("default")
    assert snap is not None
    marks = {t.topic: t.memory for t in snap.topics}
    assert marks["alpha"] is not None
    assert marks["alpha"].bytes > 0
    assert marks["beta"] is None


def test_memory_growth_alert_from_the_snapshot() -> None:
    th = AlertThresholds(memory_growth_bytes=1000, memory_growth_share=0.5)

    def snap(now: float, then: float) -> ClusterSnapshot:
        memory = {"bytes": now, "from_bytes": then, "at_ms": 600_000, "from_ms": 0,
                  "partitions": []}  # fmt: skip
        topics = [{"topic": "orders", "memory": memory}]
        return snapshot_of({"taken_at_ms": 600_000, "topics": topics})

    (cond,) = alert_conditions(snap(3000, 1000), {}, th)
    assert (cond.rule, cond.entity, cond.severity) == ("memory_growth", "orders", "warning")
    assert "in 10 min" in cond.message
    assert alert_conditions(snap(1800, 1000), {}, th) == []  # under the byte limit
    big = AlertThresholds(memory_growth_bytes=1000, memory_growth_share=2.5)
    assert alert_conditions(snap(3000, 1000), {}, big) == []  # under the share
