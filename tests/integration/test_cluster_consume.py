"""Consume, retry and dead-letter on the 3-node Redis Cluster fixture (hash-tagged keys)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import pytest

from mqcore.config import MQConfig
from mqcore.consumer import Consumer, ConsumerOptions, Outcome
from mqcore.models import Message
from mqcore.producer import OutgoingMessage, Producer
from mqcore.retry import RetryPolicy
from mqcore.topics import Topics

pytestmark = pytest.mark.cluster

TOPIC = "orders"


def wait_for(predicate: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError("condition not reached in time")


def test_consume_retry_and_dead_letter_on_cluster(cluster_config: MQConfig) -> None:
    keys = cluster_config.keys
    assert keys.partition(TOPIC, 0).count("{orders}") == 1
    Topics(cluster_config).create(TOPIC, 3)
    with Producer(cluster_config, max_retries=1) as producer:
        producer.send_many(
            TOPIC, [OutgoingMessage(payload=f"m{i}", key=f"k{i}") for i in range(30)]
        )
        producer.send(TOPIC, "always-fails", key="bad")
        producer.send(TOPIC, "dead-now", key="dead")
    handled: list[Message] = []

    def handler(m: Message) -> Outcome:
        handled.append(m)
        if m.payload == "always-fails":
            raise ValueError("nope")
        if m.payload == "dead-now":
            return Outcome.FAIL
        return Outcome.SUCCESS

    options = ConsumerOptions(
        lease_ttl_ms=3000, renew_interval_ms=500, rebalance_interval_ms=300, block_ms=100,
        retry_policy=RetryPolicy(max_retries=1, base_ms=100, max_ms=200, jitter=0.0),
        retry_move_interval_ms=100,
    )  # fmt: skip
    consumer = Consumer(cluster_config, TOPIC, handler, options)
    consumer.start()
    try:
        wait_for(lambda: consumer.stats.dead == 2 and consumer.stats.acked == 30)
        assert consumer.owned_partitions() == [0, 1, 2]
    finally:
        consumer.stop(10)
    client = cluster_config.client()
    letters = client.xrange(keys.dlq(TOPIC))
    assert len(letters) == 2
    by_payload = {raw[b"payload"].decode(): raw for _, raw in letters}
    assert by_payload["always-fails"][b"retryCount"] == b"1"
    assert by_payload["dead-now"][b"retryCount"] == b"0"
    for raw in by_payload.values():
        headers = json.loads(raw[b"headers"])
        assert headers["partitionId"] == raw[b"partitionId"].decode()
    assert consumer.stats.retried == 1
    assert [m.payload for m in handled].count("always-fails") == 2
    assert client.zcard(keys.retry_zset(TOPIC)) == 0
    for p in range(3):
        assert client.xpending(keys.partition(TOPIC, p), "default-group")["pending"] == 0
        assert client.get(keys.lease(TOPIC, "default-group", p)) is None
