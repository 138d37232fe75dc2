"""Ack-delete policies on a real redis-server: none, immediate, all-groups-ack.

Under ``immediate`` and ``all-groups-ack`` an acked entry is deleted only when no other
group on the stream still needs it (not yet delivered to it, or in its PEL): every group
counts, leased or not (a pipeline group holds no lease). Java's ``all-groups-ack`` waits
only for leased groups, through per-entry ack sets; mqcore writes none.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
import redis

from mqcore.acks import ack
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


@pytest.mark.parametrize("policy", ["immediate", "all-groups-ack"])
def test_an_entry_goes_when_the_last_group_acks_it_leased_or_not(
    r: redis.Redis, mq_config: MQConfig, setup: tuple[str, list[str]], policy: str
) -> None:
    # old: all-groups-ack deleted once the leased groups A and B acked (C held no lease but
    # had the entries pending), immediate at A's ack: C's entries were lost
    key, ids = setup
    keys, client = mq_config.keys, mq_config.client()
    _lease(r, mq_config, A, B)  # C holds no lease: it still counts
    kw = {"topic": TOPIC, "partition": 0, "epoch": None, "policy": policy}
    assert ack(client, keys, group=A, ids=ids[:2], **kw) == 2
    assert ack(client, keys, group=B, ids=ids[:1], **kw) == 1
    assert r.xlen(key) == 3  # C has every entry pending
    assert ack(client, keys, group=C, ids=ids, **kw) == 3
    assert [e[0].decode() for e in r.xrange(key)] == ids[1:]  # ids[0]: every group acked it
    assert ack(client, keys, group=A, ids=ids[:1], **kw) == 0  # not pending any more
    assert ack(client, keys, group=B, ids=ids[1:], **kw) == 2
    assert [e[0].decode() for e in r.xrange(key)] == ids[2:]
    assert not r.keys("*acks*")  # no ack sets


def test_a_group_that_has_not_read_an_entry_keeps_it(
    r: redis.Redis, mq_config: MQConfig, setup: tuple[str, list[str]]
) -> None:
    key, ids = setup
    keys, client = mq_config.keys, mq_config.client()
    r.xgroup_create(key, "late", id=ids[0])  # delivered ids[0] only (never pending)
    kw = {"topic": TOPIC, "partition": 0, "epoch": None, "policy": "immediate"}
    for g in (A, B, C):
        ack(client, keys, group=g, ids=ids, **kw)
    assert [e[0].decode() for e in r.xrange(key)] == ids[1:]


@pytest.mark.parametrize("policy", ["immediate", "all-groups-ack"])
def test_a_group_rewound_before_its_ack_keeps_what_it_reads_again(
    r: redis.Redis, mq_config: MQConfig, policy: str
) -> None:
    # found by the model checker's soak: a group moved back while it had entries pending
    # acked them, and ack-delete took them although the group reads them again
    create_topic(r, mq_config.keys, TOPIC, 1, groups=(A,))
    key = mq_config.keys.partition(TOPIC, 0)
    ids = [r.xadd(key, {"payload": f"m{i}"}).decode() for i in range(3)]
    r.xreadgroup(A, "c1", {key: ">"})
    r.xgroup_setid(key, A, "0-0")  # an operator's rewind: the PEL keeps the three entries
    kw = {"topic": TOPIC, "group": A, "partition": 0, "epoch": None, "policy": policy}
    assert ack(mq_config.client(), mq_config.keys, ids=ids, **kw) == 3
    assert [e[0].decode() for e in r.xrange(key)] == ids
    again = r.xreadgroup(A, "c2", {key: ">"})[0][1]
    assert [e[0].decode() for e in again] == ids


def test_stale_epoch_and_bad_policy_write_nothing(
    r: redis.Redis, mq_config: MQConfig, setup: tuple[str, list[str]]
) -> None:
    key, ids = setup
    keys, client = mq_config.keys, mq_config.client()
    r.set(keys.lease_epoch(TOPIC, A, 0), 5)
    with pytest.raises(FencedError):
        ack(client, keys, topic=TOPIC, group=A, partition=0, ids=ids, epoch=4,
            policy="all-groups-ack")  # fmt: skip
    with pytest.raises(InvalidArgumentError):
        ack(client, keys, topic=TOPIC, group=A, partition=0, ids=ids, epoch=5, policy="some")
    with pytest.raises(InvalidArgumentError):
        ConsumerOptions(ack_delete_policy="all")
    assert r.xpending(key, A)["pending"] == 3


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


@pytest.mark.parametrize("policy", ["immediate", "all-groups-ack"])
def test_ack_delete_keeps_what_a_group_without_a_lease_has_not_read(
    r: redis.Redis, mq_config: MQConfig, policy: str
) -> None:
    # The finding: group app acked 20 entries under an ack-delete policy and XLEN went to 0,
    # while a Spark pipeline's group (no lease) still sat at 0-0 with lag 0, "exact".
    create_topic(r, mq_config.keys, TOPIC, 1, groups=("app",))
    key = mq_config.keys.partition(TOPIC, 0)
    r.xgroup_create(key, "spark", id="0")  # a pipeline group: never read, never leased
    producer = Producer(mq_config)
    for i in range(20):
        producer.send(TOPIC, f"m{i}")
    seen: list[str] = []

    def handle(msg: Any) -> Outcome:
        seen.append(msg.id)
        return Outcome.SUCCESS

    opts = ConsumerOptions(group="app", ack_delete_policy=policy, block_ms=100, ack_batch=5)
    consumer = Consumer(mq_config, TOPIC, handle, opts)
    consumer.start()
    try:
        _until(lambda: len(seen) == 20 and r.xpending(key, "app")["pending"] == 0)
    finally:
        consumer.stop()
    assert r.xlen(key) == 20  # every entry is still there for spark
    spark = next(g for g in r.xinfo_groups(key) if g["name"] == b"spark")
    assert (spark["last-delivered-id"], spark["lag"]) == (b"0-0", 20)
    got = r.xreadgroup("spark", "s1", {key: ">"}, count=100)
    assert len(got[0][1]) == 20


@pytest.mark.parametrize("encoding", ["plain", "java-kryo"])
def test_an_ack_delete_takes_the_entrys_payload_key_but_not_on_java_kryo(
    r: redis.Redis, mq_config: MQConfig, encoding: str
) -> None:
    # entries deleted by ack-delete left their payload keys behind; on java-kryo a Java
    # service's retries share the entry's key, so none is unlinked there (as Java does)
    create_topic(r, mq_config.keys, TOPIC, 1, groups=(A,))
    keys, key = mq_config.keys, mq_config.keys.partition(TOPIC, 0)
    Producer(mq_config.with_(inline_payload_bytes=10)).send(TOPIC, "x" * 100)
    (ref,) = (k.decode() for k in r.smembers(keys.payload_index(TOPIC)))
    forged = keys.payload("payments", 0, "victim")
    r.set(forged, "secret")
    r.xadd(key, {"payload": "", "headers": json.dumps({"x-payload-hash-ref": forged})})
    ids = [e[0].decode() for e in r.xreadgroup(A, "c1", {key: ">"})[0][1]]
    kw = {"topic": TOPIC, "partition": 0, "epoch": None, "policy": "immediate"}
    assert ack(mq_config.client(), keys, group=A, ids=ids, frontier=encoding, **kw) == 2
    assert r.xlen(key) == 0
    kept = encoding == "java-kryo"
    assert (r.exists(ref), r.sismember(keys.payload_index(TOPIC), ref)) == (kept, kept)
    assert r.get(forged) == b"secret"  # another topic's key is never followed
