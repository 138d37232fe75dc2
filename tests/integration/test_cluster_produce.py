"""The write side on a 3-node Redis Cluster: every multi-key script stays in one slot."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
import redis

from mqcore.config import MQConfig
from mqcore.partition import partition_for_key
from mqcore.producer import OutgoingMessage, Producer
from mqcore.retention.trim import trim_topic
from mqcore.retry import RetryMover
from mqcore.topics import Topics
from tests.integration.retry_items import schedule

pytestmark = [pytest.mark.redis, pytest.mark.cluster]


@pytest.fixture
def rc(cluster_config: MQConfig) -> Iterator[redis.RedisCluster]:
    client = cluster_config.client()
    yield client
    client.close()


def test_create_send_move_delete_on_a_cluster(
    cluster_config: MQConfig, rc: redis.RedisCluster
) -> None:
    topics = Topics(cluster_config, rc)
    info = topics.create("orders", 4, groups=["default-group", "g2"])
    assert (info.partitions, info.groups) == (4, ["default-group", "g2"])
    topics.create("other", 1)
    ks = cluster_config.keys
    assert ks.partition("orders", 0) == "stream:topic:{orders}:p:0"
    with Producer(cluster_config, rc) as producer:
        one = producer.send("orders", "hello", key="k1", headers={"a": "b"})
        many = producer.send_many(
            "orders", [OutgoingMessage(f"m{i}", key=f"k{i}") for i in range(50)], batch_size=20
        )
        big = producer.send("orders", "x" * 70_000, partition=3)
        producer.send("other", "y")
    assert one.partition == partition_for_key("k1", 4)
    assert len(many) == 50
    [(_, fields)] = rc.xrange(ks.partition("orders", 3), big.id, big.id)
    ref = json.loads(fields[b"headers"])["x-payload-hash-ref"]
    assert "{orders}" in ref
    assert json.loads(rc.get(ref)) == "x" * 70_000
    assert topics.describe("orders").length == 52
    assert [t.topic for t in topics.list()] == ["orders", "other"]

    now = int(time.time() * 1000)
    for i in range(10):
        schedule(rc, ks, "orders", i % 4, f"r{i}", due_ms=now - 10)
    assert RetryMover(cluster_config, rc).move_all() == 10
    assert topics.describe("orders").length == 62
    assert rc.zcard(ks.retry_zset("orders")) == 0

    topics.grow("orders", 6)
    assert {g["name"] for g in rc.xinfo_groups(ks.partition("orders", 5))} == {
        b"default-group",
        b"g2",
    }
    assert trim_topic(topics, "orders", maxlen=0) >= 0
    topics.delete("orders")
    assert topics.names() == ["other"]
    assert rc.exists(ks.partition("orders", 0), ks.meta("orders"), ref) == 0
