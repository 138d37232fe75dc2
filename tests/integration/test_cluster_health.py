"""Redis Cluster's health per node on the 3-node Cluster fixture: every node's INFO numbers,
eviction policy and slow log, the slot coverage, the MQ partitions per node, the node
holding the most and the hottest, from the collector's minute probe to the collectors
page, its API and /metrics."""

from __future__ import annotations

import pytest
import redis
from django.test import Client

from dashboard.alerts import AlertThresholds, alert_conditions
from dashboard.clusters import console_keys, console_redis
from dashboard.collectors.passes import collect_cluster
from dashboard.store import ConsoleStore
from mqcore.admin.probes import cluster_health
from mqcore.config import MQConfig
from mqcore.producer import Producer
from mqcore.topics import Topics
from tests.harness.cluster import LocalCluster
from tests.integration.acl_support import mq_cluster
from tests.integration.dlq_support import role_user

pytestmark = [pytest.mark.redis, pytest.mark.django_db]


def _topics(config: MQConfig) -> list[tuple[str, int]]:
    topics = [("orders", 4), ("audit", 2), ("billing", 3)]
    for name, partitions in topics:
        Topics(config).create(name, partitions, groups=["g"])
    with Producer(config) as producer:
        for n in range(10):
            producer.send("orders", f"m{n}", key=f"k{n}")
    return topics


def test_every_node_and_the_partitions_it_holds(
    cluster_config: MQConfig, redis_cluster: LocalCluster
) -> None:
    topics = _topics(cluster_config)
    client = cluster_config.client()
    assert isinstance(client, redis.RedisCluster)
    h = cluster_health(client, cluster_config.keys, topics)
    assert h["cluster"] is True
    assert (h["state"], h["slots_ok"], h["slot_coverage"]) == ("ok", 16384, 1.0)
    names = {f"{n.host}:{n.port}" for n in redis_cluster.nodes}
    assert {n["node"] for n in h["nodes"]} == names
    by_node = {
        name: sum(
            1
            for topic, count in topics
            for p in range(count)
            if client.get_node_from_key(cluster_config.keys.partition(topic, p)).name == name
        )
        for name in names
    }
    assert {n["node"]: n["partitions"] for n in h["nodes"]} == by_node
    assert sum(by_node.values()) == 9
    assert h["most_partitions"] == max(sorted(by_node), key=lambda n: by_node[n])
    assert h["hottest"] in names
    for node in h["nodes"]:
        assert node["role"] == "master"
        assert node["used_memory"] > 0
        assert node["maxmemory_policy"] == "noeviction"
        assert node["appendfsync"] in ("everysec", "always", "no")
        assert isinstance(node["slowlog"], list)
    # a node that may evict keys is alerted on by name
    first = redis_cluster.nodes[0]
    with redis.Redis(host=first.host, port=first.port) as admin:
        admin.config_set("maxmemory-policy", "allkeys-lru")
        try:
            evicting = cluster_health(client, cluster_config.keys, topics)
        finally:
            admin.config_set("maxmemory-policy", "noeviction")
    conditions = alert_conditions(None, {"redis": evicting}, AlertThresholds())
    assert [(c.rule, c.entity) for c in conditions] == [
        ("redis_eviction", f"redis {first.host}:{first.port}")
    ]


def test_collectors_page_api_and_metrics_show_each_node(
    cluster_config: MQConfig, redis_cluster: LocalCluster, console_r: redis.Redis
) -> None:
    _topics(cluster_config)
    node = redis_cluster.nodes[0]
    slow = redis.Redis(host=node.host, port=node.port)
    slow.config_set("slowlog-log-slower-than", 0)  # this node logs the pass's commands
    slow.slowlog_reset()
    try:
        with mq_cluster(url=f"redis+cluster://{node.host}:{node.port}/0"):
            result = collect_cluster(
                "default", claim=False, store=ConsoleStore(console_redis(), console_keys())
            )
            assert result.error is None
            client = Client()
            client.force_login(role_user("vic", "Viewer"))
            (row,) = client.get("/api/v1/collectors").json()["collectors"]
            h = row["redis"]
            assert (h["cluster"], h["slot_coverage"], len(h["nodes"])) == (True, 1.0, 3)
            assert sum(n["partitions"] for n in h["nodes"]) == 9
            first = next(n for n in h["nodes"] if n["node"] == f"{node.host}:{node.port}")
            assert first["slowlog"], "the node that logs every command shows its slow log"
            assert all("args" not in e for e in first["slowlog"])
            page = client.get("/collectors/").content.decode()
            assert "Redis Cluster of default" in page
            for n in h["nodes"]:
                assert f'data-node="{n["node"]}"' in page
            assert f"Most partitions: <code>{h['most_partitions']}</code>" in page
            metrics = client.get("/metrics").content.decode()
            assert 'opsdash_redis_cluster_slot_coverage{cluster="default"} 1.0' in metrics
            per_node = [
                line
                for line in metrics.splitlines()
                if line.startswith("opsdash_redis_node_partitions{")
            ]
            assert len(per_node) == 3
            assert sum(float(line.rsplit(" ", 1)[1]) for line in per_node) == 9
    finally:
        slow.config_set("slowlog-log-slower-than", 10000)
        slow.close()
