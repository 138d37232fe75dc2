"""Partition leases: SET NX PX + fencing epoch, renew/release only by the holder."""

from __future__ import annotations

import threading

import pytest
import redis

from mqcore.config import MQConfig
from mqcore.errors import InvalidArgumentError
from mqcore.leases import LeaseManager

pytestmark = pytest.mark.redis

TOPIC, GROUP = "orders", "default-group"


def _manager(cfg: MQConfig, owner: str, ttl_ms: int = 5000) -> LeaseManager:
    return LeaseManager(
        cfg.client(), cfg.keys, topic=TOPIC, group=GROUP, owner=owner, ttl_ms=ttl_ms
    )


def test_acquire_sets_java_readable_value_ttl_and_epoch(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    a = _manager(mq_config, "consumer-a")
    lease = a.acquire(2)
    assert lease is not None
    assert (lease.partition, lease.owner, lease.epoch) == (2, "consumer-a", 1)
    key = mq_config.keys.lease(TOPIC, GROUP, 2)
    assert key == "streaming:mq:lease:orders:default-group:2"
    assert r.get(key) == b"consumer-a"
    assert 0 < r.pttl(key) <= 5000
    # re-acquiring our own lease keeps the epoch
    again = a.acquire(2)
    assert again is not None
    assert again.epoch == 1


def test_second_consumer_is_refused_until_release_then_epoch_grows(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    a, b = _manager(mq_config, "a"), _manager(mq_config, "b")
    lease_a = a.acquire(0)
    assert lease_a is not None
    assert b.acquire(0) is None
    # b cannot renew or release a's lease
    assert b.renew(lease_a.__class__(TOPIC, GROUP, 0, "b", lease_a.epoch, 0)) is False
    b.release(lease_a.__class__(TOPIC, GROUP, 0, "b", lease_a.epoch, 0))
    assert r.get(mq_config.keys.lease(TOPIC, GROUP, 0)) == b"a"
    assert a.renew(lease_a) is True
    a.release(lease_a)
    assert r.get(mq_config.keys.lease(TOPIC, GROUP, 0)) is None
    lease_b = b.acquire(0)
    assert lease_b is not None
    assert lease_b.epoch == 2
    # a's stale lease can neither renew nor release b's
    assert a.renew(lease_a) is False
    a.release(lease_a)
    assert a.current(0) == ("b", pytest.approx(5000, abs=1000), 2)


def test_expired_lease_is_taken_over_with_a_higher_epoch(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    a, b = _manager(mq_config, "a", ttl_ms=200), _manager(mq_config, "b", ttl_ms=200)
    lease_a = a.acquire(1)
    assert lease_a is not None
    r.pexpire(mq_config.keys.lease(TOPIC, GROUP, 1), 1)
    r.delete(mq_config.keys.lease(TOPIC, GROUP, 1))  # the TTL ran out
    lease_b = b.acquire(1)
    assert lease_b is not None
    assert lease_b.epoch > lease_a.epoch
    assert a.renew(lease_a) is False


def test_java_lease_without_epoch_key_is_respected(r: redis.Redis, mq_config: MQConfig) -> None:
    r.set(mq_config.keys.lease(TOPIC, GROUP, 3), "java-consumer-1", px=5000)
    assert _manager(mq_config, "py").acquire(3) is None


def test_racing_acquirers_get_one_holder(r: redis.Redis, mq_config: MQConfig) -> None:
    managers = [_manager(mq_config, f"c{i}") for i in range(8)]
    barrier = threading.Barrier(len(managers))
    won: list[str] = []

    def race(m: LeaseManager) -> None:
        barrier.wait()
        if m.acquire(0) is not None:
            won.append(m.owner)

    threads = [threading.Thread(target=race, args=(m,)) for m in managers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(won) == 1
    assert int(r.get(mq_config.keys.lease_epoch(TOPIC, GROUP, 0)) or 0) == 1


def test_bad_arguments_are_refused(mq_config: MQConfig) -> None:
    with pytest.raises(InvalidArgumentError):
        LeaseManager(mq_config.client(), mq_config.keys, topic="a:b", group=GROUP, owner="x")
    with pytest.raises(InvalidArgumentError):
        LeaseManager(mq_config.client(), mq_config.keys, topic=TOPIC, group=GROUP, owner="")
