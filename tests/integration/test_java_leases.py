"""Leases beside a Java redis-streaming service on the same Redis.

Java takes a lease with SETNX then EXPIRE and never touches mqcore's fencing epoch;
it grows a topic by writing only the meta hash and the partitions set. mqcore must
still fence its zombies, free a lease Java left without a TTL, not double a stalled
holder's batch on take-over, and consume the partitions Java added without a restart.
"""

from __future__ import annotations

import dataclasses
import threading

import pytest
import redis

from mqcore.acks import ack
from mqcore.config import MQConfig
from mqcore.consumer import Consumer
from mqcore.errors import FencedError
from mqcore.leases import LeaseManager
from mqcore.models import Message
from mqcore.topics import Topics
from tests.integration.test_consumer import FAST, GROUP, TOPIC, _send, running, wait_for

pytestmark = pytest.mark.redis


def java_takes_lease(r: redis.Redis, cfg: MQConfig, partition: int, *, ttl: bool = True) -> None:
    """What Java's lease code does: SETNX the owner, then (maybe) EXPIRE; no epoch."""
    key = cfg.keys.lease(TOPIC, GROUP, partition)
    r.delete(key)  # the mqcore holder's lease expired
    assert r.setnx(key, "java-worker-7")
    if ttl:
        r.expire(key, 30)


def test_zombie_writes_are_refused_after_a_java_take_over(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    Topics(mq_config).create(TOPIC, 1)
    ids = _send(mq_config, ["a", "b"])
    stream = mq_config.keys.partition(TOPIC, 0)
    r.xreadgroup(GROUP, "py-1", {stream: ">"})
    lease = LeaseManager(r, mq_config.keys, topic=TOPIC, group=GROUP, owner="py-1").acquire(0)
    assert lease is not None
    java_takes_lease(r, mq_config, 0)
    kw = {"topic": TOPIC, "group": GROUP, "partition": 0, "epoch": lease.epoch}
    with pytest.raises(FencedError):
        ack(r, mq_config.keys, ids=ids, owner="py-1", **kw)
    assert r.xpending(stream, GROUP)["pending"] == 2  # nothing acked
    r.delete(mq_config.keys.lease(TOPIC, GROUP, 0))  # expired, nobody took it: still ours
    assert ack(r, mq_config.keys, ids=ids[:1], owner="py-1", **kw) == 1


def test_a_frozen_consumer_is_fenced_after_a_java_take_over(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    Topics(mq_config).create(TOPIC, 1)
    _send(mq_config, ["slow"])
    entered, release = threading.Event(), threading.Event()

    def handler(m: Message) -> None:
        entered.set()
        release.wait(10)

    consumer = Consumer(mq_config, TOPIC, handler, FAST)
    with running(consumer):
        wait_for(entered.is_set)
        java_takes_lease(r, mq_config, 0)  # no epoch change
        release.set()
        wait_for(lambda: consumer.stats.fenced >= 1)
        assert consumer.stats.acked == 0
    assert r.xpending(mq_config.keys.partition(TOPIC, 0), GROUP)["pending"] == 1
    assert r.get(mq_config.keys.lease(TOPIC, GROUP, 0)) == b"java-worker-7"


def test_a_lease_java_left_without_ttl_is_repaired(r: redis.Redis, mq_config: MQConfig) -> None:
    Topics(mq_config).create(TOPIC, 1)
    java_takes_lease(r, mq_config, 0, ttl=False)  # died between SETNX and EXPIRE
    _send(mq_config, ["x", "y"])
    seen: list[str] = []
    consumer = Consumer(mq_config, TOPIC, lambda m: seen.append(m.payload), FAST)
    with running(consumer):
        wait_for(lambda: r.pttl(mq_config.keys.lease(TOPIC, GROUP, 0)) > 0)
        wait_for(lambda: len(seen) == 2)  # after the TTL it gave, the partition is ours
    assert sorted(seen) == ["x", "y"]


def test_take_over_waits_a_grace_before_claiming_a_stalled_holders_batch(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    Topics(mq_config).create(TOPIC, 1)
    _send(mq_config, ["p0", "p1"])
    stream = mq_config.keys.partition(TOPIC, 0)
    r.xreadgroup(GROUP, "java-worker-7", {stream: ">"})  # its batch, idle from now
    seen: list[str] = []
    opts = dataclasses.replace(FAST, takeover_grace_ms=1500)
    consumer = Consumer(mq_config, TOPIC, lambda m: seen.append(m.payload), opts)
    with running(consumer):
        wait_for(lambda: consumer.owned_partitions() == [0])
        threading.Event().wait(0.5)
        assert seen == []  # still within the grace: the holder may yet ack
        wait_for(lambda: sorted(seen) == ["p0", "p1"])  # then claimed and handled
    assert consumer.stats.reclaimed == 2


def test_partitions_added_by_java_are_consumed_without_a_restart(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    keys = mq_config.keys
    Topics(mq_config).create(TOPIC, 2)
    seen: list[str] = []
    consumer = Consumer(mq_config, TOPIC, lambda m: seen.append(m.payload), FAST)
    with running(consumer):
        wait_for(lambda: sorted(consumer.owned_partitions()) == [0, 1])
        # Java's TopicPartitionRegistry: meta and partitions set only, no stream, no group
        r.hset(keys.meta(TOPIC), "partitionCount", 4)
        r.sadd(keys.partitions_set(TOPIC), keys.partition(TOPIC, 2), keys.partition(TOPIC, 3))
        r.xadd(keys.partition(TOPIC, 3), {"payload": "on-3", "partitionId": "3"})
        wait_for(lambda: "on-3" in seen)
        assert sorted(consumer.owned_partitions()) == [0, 1, 2, 3]
    assert {g["name"] for g in r.xinfo_groups(keys.partition(TOPIC, 3))} == {GROUP.encode()}


def test_a_clean_release_is_a_clean_handoff_and_an_expiry_is_not(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    Topics(mq_config).create(TOPIC, 1)
    a = LeaseManager(r, mq_config.keys, topic=TOPIC, group=GROUP, owner="a", ttl_ms=5000)
    b = LeaseManager(r, mq_config.keys, topic=TOPIC, group=GROUP, owner="b", ttl_ms=5000)
    first = a.acquire(0)
    assert first is not None
    a.release(first)
    taken = b.acquire(0)
    assert taken is not None
    assert taken.clean_handoff  # no grace: a released everything it did not ack
    r.delete(mq_config.keys.lease(TOPIC, GROUP, 0))  # b's lease expires (a crash)
    again = a.acquire(0)
    assert again is not None
    assert not again.clean_handoff
    java_takes_lease(r, mq_config, 0)
    r.delete(mq_config.keys.lease(TOPIC, GROUP, 0))
    after_java = b.acquire(0)
    assert after_java is not None
    assert not after_java.clean_handoff


def test_take_over_from_a_killed_mqcore_holder_claims_at_once_and_in_order(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    """An mqcore holder's late acks are fenced: its pending batch is claimed without the
    grace, and handled before the entries after it."""
    from mqcore.consumer.membership import write_heartbeat

    Topics(mq_config).create(TOPIC, 1)
    _send(mq_config, ["p0", "p1"])
    stream = mq_config.keys.partition(TOPIC, 0)
    killed = LeaseManager(r, mq_config.keys, topic=TOPIC, group=GROUP, owner="mq-a")
    assert killed.acquire(0) is not None
    write_heartbeat(r, mq_config.keys.consumers(TOPIC, GROUP), "mq-a", partitions=[0],
                    max_partitions=None)  # fmt: skip
    r.xreadgroup(GROUP, "mq-a", {stream: ">"})  # its batch, pending; then it is killed
    r.delete(mq_config.keys.lease(TOPIC, GROUP, 0))  # its lease expires
    _send(mq_config, ["p2", "p3"])  # newer entries
    seen: list[str] = []
    opts = dataclasses.replace(FAST, takeover_grace_ms=5000)
    consumer = Consumer(mq_config, TOPIC, lambda m: seen.append(m.payload), opts)
    with running(consumer):
        wait_for(lambda: consumer.owned_partitions() == [0])
        threading.Event().wait(1.5)
        assert seen == ["p0", "p1", "p2", "p3"]  # no 5 s wait; the pending ones first
    assert consumer.stats.reclaimed == 2
