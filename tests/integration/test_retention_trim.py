"""mqcore's housekeeper on a real redis-server: rules trim, unread entries stay."""

from __future__ import annotations

import json

import pytest
import redis

from mqcore.config import MQConfig
from mqcore.retention import RetentionPolicy, housekeep, trim_partition
from mqcore.retention.trim import trim_dlq
from tests.integration.raw_java import create_topic

pytestmark = pytest.mark.redis
A, B = "group-a", "group-b"


def _fill(r: redis.Redis, key: str, n: int, start_ms: int = 1_000) -> list[str]:
    pipe = r.pipeline(transaction=False)
    for i in range(n):
        pipe.xadd(key, {"payload": f"m{i}"}, id=f"{start_ms + i}-0")
    pipe.execute()
    return [f"{start_ms + i}-0" for i in range(n)]


def _read_ack(r: redis.Redis, key: str, group: str, n: int, ack: int) -> None:
    got = r.xreadgroup(group, "c1", {key: ">"}, count=n)
    ids = [e[0] for e in got[0][1]] if got else []
    if ack:
        r.xack(key, group, *ids[:ack])


@pytest.fixture
def key(r: redis.Redis, mq_config: MQConfig) -> str:
    create_topic(r, mq_config.keys, "orders", 1, groups=(A, B))
    return mq_config.keys.partition("orders", 0)


def test_maxlen_stops_at_the_slowest_groups_unread_entries(
    r: redis.Redis, mq_config: MQConfig, key: str
) -> None:
    ids = _fill(r, key, 5_000)
    _read_ack(r, key, A, 4_000, 4_000)  # A consumed 4,000
    _read_ack(r, key, B, 1_500, 1_000)  # B read 1,500, acked 1,000: 500 pending
    got = trim_partition(r, mq_config.keys, "orders", 0, RetentionPolicy.build(maxlen=100))
    # MAXLEN 100 wants 4,900 gone; B's lowest pending entry (the 1,001st) holds it at 1,000
    assert got.deleted == 1_000
    assert got.held_by == B
    assert r.xlen(key) == 4_000
    first = r.xrange(key, count=1)[0][0].decode()
    assert first == ids[1_000]
    # B still gets every pending and unread entry
    assert r.xpending(key, B)["pending"] == 500
    assert r.xinfo_groups(key)[1]["lag"] == 3_500


def test_rounds_are_bounded_and_the_ignored_group_lets_the_trim_through(
    r: redis.Redis, mq_config: MQConfig, key: str
) -> None:
    _fill(r, key, 2_500)
    _read_ack(r, key, A, 2_500, 2_500)
    # B never read anything: it holds everything
    held = trim_partition(r, mq_config.keys, "orders", 0, RetentionPolicy.build(consumed=True))
    assert (held.deleted, held.held_by) == (0, B)
    policy = RetentionPolicy.build(consumed=True, ignore_groups=[B])
    dry = trim_partition(r, mq_config.keys, "orders", 0, policy, dry_run=True, per_round=1_000)
    assert (dry.deleted, dry.more, dry.dry_run) == (1_000, True, True)
    assert r.xlen(key) == 2_500
    done = trim_partition(r, mq_config.keys, "orders", 0, policy, per_round=1_000)
    assert (done.deleted, done.rounds) == (2_500, 3)
    assert r.xlen(key) == 0


def test_age_rule_and_housekeep_over_every_topic(
    r: redis.Redis, mq_config: MQConfig, key: str
) -> None:
    _fill(r, key, 300, start_ms=1_000)
    _fill(r, key, 200, start_ms=10_000_000)
    _read_ack(r, key, A, 500, 500)
    _read_ack(r, key, B, 500, 500)
    create_topic(r, mq_config.keys, "empty", 2, groups=(A,))
    policy = RetentionPolicy.build(max_age=60)  # 60 s: everything from 1970 is old
    out = housekeep(r, mq_config.keys, policy)
    assert [(t.topic, t.partition, t.deleted) for t in out] == [
        ("empty", 0, 0), ("empty", 1, 0), ("orders", 0, 500),
    ]  # fmt: skip


def test_a_group_that_has_read_nothing_keeps_everything(
    r: redis.Redis, mq_config: MQConfig, key: str
) -> None:
    _fill(r, key, 50)
    r.xgroup_create(key, "late", id="0")
    _read_ack(r, key, A, 50, 50)
    _read_ack(r, key, B, 50, 50)
    got = trim_partition(r, mq_config.keys, "orders", 0, RetentionPolicy.build(maxlen=10))
    assert (got.deleted, got.held_by) == (0, "late")
    assert r.xlen(key) == 50


def test_bad_policy_is_refused() -> None:
    from mqcore.errors import InvalidArgumentError

    for bad in ({"maxlen": "many"}, {"max_age": "7 weeks"}, {"ignore_groups": ["a:b"]}):
        with pytest.raises(InvalidArgumentError):
            RetentionPolicy.from_mapping(bad)


def test_trimmed_entries_take_their_payload_keys_and_forged_refs_are_left(
    r: redis.Redis, mq_config: MQConfig, key: str
) -> None:
    from mqcore.config import MQConfig as Config
    from mqcore.producer import Producer

    cfg = Config.from_url(mq_config.url, inline_payload_bytes=10)
    producer = Producer(cfg)
    for i in range(3):
        producer.send("orders", "x" * 100 + str(i), partition=0)
    keys = mq_config.keys
    own = sorted(k.decode() for k in r.smembers(keys.payload_index("orders")))
    assert len(own) == 3
    assert all(r.pttl(k) == -1 for k in own)  # no payload TTL by default, as in Java
    other = keys.payload("payments", 0, "victim")
    r.set(other, "secret")
    r.xadd(key, {"payload": "", "headers": json.dumps({"x-payload-hash-ref": other})})
    _read_ack(r, key, A, 10, 10)
    _read_ack(r, key, B, 10, 10)
    done = trim_partition(r, keys, "orders", 0, RetentionPolicy.build(consumed=True))
    assert done.deleted == 4
    assert not any(r.exists(k) for k in own)
    assert not r.smembers(keys.payload_index("orders"))
    assert r.get(other) == b"secret"  # a reference to another topic's key is not followed


def test_on_java_kryo_trims_leave_payload_keys_and_a_dlq_trim_takes_its_letters_keys(
    r: redis.Redis, mq_config: MQConfig, key: str
) -> None:
    # A Java service's retries point at the entry's payload key: on java-kryo no delete
    # unlinks one (Java never does). A letter's key is under its own partition's prefix.
    keys = mq_config.keys
    ref = keys.payload("orders", 0, "u1")
    r.set(ref, '"big"')
    r.sadd(keys.payload_index("orders"), ref)
    r.xadd(key, {"payload": "", "headers": json.dumps({"x-payload-hash-ref": ref})})
    _read_ack(r, key, A, 10, 10)
    _read_ack(r, key, B, 10, 10)
    policy = RetentionPolicy.build(consumed=True)
    done = trim_partition(r, keys, "orders", 0, policy, encoding="java-kryo")
    assert (done.deleted, r.exists(ref)) == (1, 1)
    letter = keys.payload("orders", 3, "dead")
    r.set(letter, '"big"')
    r.xadd(
        keys.dlq("orders"), {"payload": "", "headers": json.dumps({"x-payload-hash-ref": letter})}
    )
    got = trim_dlq(r, keys, "orders", RetentionPolicy(maxlen=0))
    assert (got.deleted, r.exists(letter), r.exists(ref)) == (1, 0, 1)
