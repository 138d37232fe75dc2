"""Java's ack-delete policies on a real redis-server: none, immediate, all-groups-ack.

``all-groups-ack`` (Java's ``DefaultBroker.ack``): each ack adds the group to the entry's
ack set (``acks:{t}:p:{i}:{id}``, TTL ``acksetTtlSec``); the entry is deleted once every
live group (on the stream, holding a lease on the partition) has acked it.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
import redis

from mqcore.acks import ACKSET_TTL_S, ack
from mqcore.config import MQConfig
from mqcore.consumer import Consumer, ConsumerOptions, Outcome
from mqcore.errors import FencedError, InvalidArgumentError
from mqcore.producer import Producer
from tests.integration.raw_java import create_topic

pytestmark = pytest.mark.redis
TOPIC, A, B, C = "orders", "group-a", "group-b", "group-c"


@pytest.fixture
def setup(r: redis.Redis, mq_config: MQConfig) -> tuple[str, list[str]]:
    create_topic(r, mq_config.keys, TOPIC, 1, groups=(A, B, C))
    key = mq_config.keys.partition(TOPIC, 0)
    ids = [r.xadd(key, {"payload": f"m{i}"}).decode() for i in range(3)]
    for g in (A, B, C):
        r.xreadgroup(g, "c1", {key: ">"})
    return key, ids


def _lease(r: redis.Redis, mq_config: MQConfig, *groups: str) -> None:
    for g in groups:
        r.set(mq_config.keys.lease(TOPIC, g, 0), f"{g}-worker", px=30_000)


def test_all_groups_ack_deletes_after_every_live_group(
    r: redis.Redis, mq_config: MQConfig, setup: tuple[str, list[str]]
) -> None:
    key, ids = setup
    keys, client = mq_config.keys, mq_config.client()
    _lease(r, mq_config, A, B)  # C holds no lease: Java does not wait for it
    kw = {"topic": TOPIC, "partition": 0, "epoch": None, "policy": "all-groups-ack",
          "groups": [A, B, C]}  # fmt: skip
    assert ack(client, keys, group=A, ids=ids[:2], **kw) == 2
    assert r.xlen(key) == 3
    ackset = keys.acks(TOPIC, 0, ids[0])
    assert r.smembers(ackset) == {A.encode()}
    assert 0 < r.ttl(ackset) <= ACKSET_TTL_S
    assert ack(client, keys, group=B, ids=ids[:1], **kw) == 1
    assert r.xlen(key) == 2  # A and B (the live groups) acked ids[0]: gone, ack set too
    assert not r.exists(ackset)
    assert ack(client, keys, group=A, ids=ids[:1], **kw) == 0  # not pending any more


def test_a_group_the_caller_did_not_name_is_waited_for(
    r: redis.Redis, mq_config: MQConfig, setup: tuple[str, list[str]]
) -> None:
    key, ids = setup
    keys, client = mq_config.keys, mq_config.client()
    _lease(r, mq_config, A, B)
    kw = {"topic": TOPIC, "partition": 0, "epoch": None, "policy": "all-groups-ack"}
    ack(client, keys, group=A, ids=ids, groups=[A, B], **kw)
    ack(client, keys, group=B, ids=ids, groups=[A, B], **kw)
    assert r.xlen(key) == 3  # C is on the stream, its lease key was not passed: it is live
    ack(client, keys, group=C, ids=ids, groups=None, **kw)
    assert r.xlen(key) == 0  # no lease keys: every group counts as live, and all acked


def test_stale_epoch_and_bad_policy_write_nothing(
    r: redis.Redis, mq_config: MQConfig, setup: tuple[str, list[str]]
) -> None:
    key, ids = setup
    keys, client = mq_config.keys, mq_config.client()
    r.set(keys.lease_epoch(TOPIC, A, 0), 5)
    with pytest.raises(FencedError):
        ack(client, keys, topic=TOPIC, group=A, partition=0, ids=ids, epoch=4,
            policy="all-groups-ack", groups=[A])  # fmt: skip
    with pytest.raises(InvalidArgumentError):
        ack(client, keys, topic=TOPIC, group=A, partition=0, ids=ids, epoch=5, policy="some")
    with pytest.raises(InvalidArgumentError):
        ConsumerOptions(ack_delete_policy="all")
    assert r.xpending(key, A)["pending"] == 3
    assert not r.exists(keys.acks(TOPIC, 0, ids[0]))


def test_consumers_of_two_groups_delete_only_what_both_handled(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    create_topic(r, mq_config.keys, TOPIC, 1, groups=(A, B))
    key = mq_config.keys.partition(TOPIC, 0)
    producer = Producer(mq_config)
    for i in range(50):
        producer.send(TOPIC, f"m{i}")
    seen: dict[str, int] = {A: 0, B: 0}
    gate = threading.Event()

    def handler(group: str) -> Any:
        def handle(_msg: Any) -> Outcome:
            if group == B:
                gate.wait(30)  # B holds its lease but does not ack yet
            seen[group] += 1
            return Outcome.SUCCESS

        return handle

    opts: dict[str, Any] = {"ack_delete_policy": "all-groups-ack", "block_ms": 100,
                            "ack_batch": 10}  # fmt: skip
    slow = Consumer(mq_config, TOPIC, handler(B), ConsumerOptions(group=B, **opts))
    fast = Consumer(mq_config, TOPIC, handler(A), ConsumerOptions(group=A, **opts))
    slow.start()
    try:
        _until(lambda: r.exists(mq_config.keys.lease(TOPIC, B, 0)))
        fast.start()
        _until(lambda: seen[A] == 50 and r.xpending(key, A)["pending"] == 0)
        assert r.xlen(key) == 50  # B is live and has acked nothing: nothing deleted
        gate.set()
        _until(lambda: r.xlen(key) == 0)  # B acked too: every entry went
    finally:
        gate.set()
        fast.stop()
        slow.stop()
    assert seen == {A: 50, B: 50}


def _until(check: Any, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)
