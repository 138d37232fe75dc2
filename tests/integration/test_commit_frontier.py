"""Every mqcore ack raises the group's commit frontier (in the deployment's encoding), never
past an entry the group still holds pending, so Java's retention housekeeper, which trims
each partition below the lowest frontier of the groups holding a lease, loses nothing of a
Python group that is behind."""

from __future__ import annotations

import time

import pytest
import redis

from mqcore.acks import ack
from mqcore.codec import kryo
from mqcore.config import MQConfig
from mqcore.consumer import Consumer, ConsumerOptions, Outcome
from mqcore.retention.frontier import frontier_ids
from tests.integration.raw_java import create_topic

pytestmark = pytest.mark.redis
TOPIC, JAVA, PY = "orders", "java-group", "python-group"


def _ids(r: redis.Redis, key: str, group: str, n: int) -> list[str]:
    got = r.xreadgroup(group, "c1", {key: ">"}, count=n)
    return [e[0].decode() for e in got[0][1]] if got else []


@pytest.mark.parametrize("encoding", ["plain", "java-kryo"])
def test_ack_raises_the_frontier_but_never_past_a_pending_entry(
    r: redis.Redis, redis_url: str, encoding: str
) -> None:
    cfg = MQConfig.from_url(redis_url, encoding=encoding)
    create_topic(r, cfg.keys, TOPIC, 1, groups=(PY,))
    key = cfg.keys.partition(TOPIC, 0)
    for i in range(10):
        r.xadd(key, {"payload": str(i)}, id=f"{1000 + i}-0")
    ids = _ids(r, key, PY, 10)
    kw = {"topic": TOPIC, "group": PY, "partition": 0, "epoch": None, "frontier": encoding}
    ack(r, cfg.keys, ids=ids[:3], **kw)
    front = cfg.keys.commit_frontier(TOPIC, 0)
    raw = r.hgetall(front)
    if encoding == "java-kryo":  # exactly what Redisson's Kryo5Codec writes
        assert raw == {kryo.encode(PY): kryo.encode("1003-0")}
    assert frontier_ids(raw) == {PY: "1003-0"}  # the lowest pending entry: 1003-0
    ack(r, cfg.keys, ids=ids[5:9], **kw)  # 1003, 1004 still pending
    assert frontier_ids(r.hgetall(front)) == {PY: "1003-0"}
    ack(r, cfg.keys, ids=ids[3:5], **kw)
    assert frontier_ids(r.hgetall(front)) == {PY: "1009-0"}  # 1009 pending: it stays
    ack(r, cfg.keys, ids=ids[9:], **kw)
    assert frontier_ids(r.hgetall(front)) == {PY: "1009-0"}  # nothing pending: last acked


def java_housekeeper(r: redis.Redis, cfg: MQConfig, partition: int) -> None:
    """StreamRetentionHousekeeper's frontier trim, as its Java code does it."""
    frontiers = frontier_ids(r.hgetall(cfg.keys.commit_frontier(TOPIC, partition)))
    live = [
        fid for group, fid in frontiers.items()
        if r.exists(cfg.keys.lease(TOPIC, group, partition))
    ]  # fmt: skip
    if live:
        lowest = min(live, key=lambda i: tuple(int(x) for x in i.split("-")))
        r.xtrim(cfg.keys.partition(TOPIC, partition), minid=lowest, approximate=True)


def test_java_housekeeper_loses_nothing_of_a_python_group_that_is_behind(
    r: redis.Redis, redis_url: str
) -> None:
    cfg = MQConfig.from_url(redis_url, encoding="java-kryo")
    create_topic(r, cfg.keys, TOPIC, 1, groups=(JAVA, PY))
    key = cfg.keys.partition(TOPIC, 0)
    pipe = r.pipeline(transaction=False)
    for i in range(4000):
        pipe.xadd(key, {"payload": f"m{i}"}, id=f"{1000 + i}-0")
    pipe.execute()
    # the Java group is far ahead: lease and Kryo frontier at the 3,700th entry
    java_ids = _ids(r, key, JAVA, 3700)
    r.xack(key, JAVA, *java_ids)
    r.hset(cfg.keys.commit_frontier(TOPIC, 0), kryo.encode(JAVA), kryo.encode(java_ids[-1]))
    r.set(cfg.keys.lease(TOPIC, JAVA, 0), "java-worker-1", px=60_000)
    handled: list[str] = []

    def handler(m):  # type: ignore[no-untyped-def]
        handled.append(m.payload)
        return Outcome.SUCCESS

    opts = ConsumerOptions(group=PY, batch_size=100, ack_batch=100, block_ms=100)
    consumer = Consumer(cfg, TOPIC, handler, opts)
    consumer.start()
    try:
        deadline = time.monotonic() + 30
        while len(handled) < 1000 and time.monotonic() < deadline:
            time.sleep(0.01)
        java_housekeeper(r, cfg, 0)  # mid-stream, with the Python group ~1,000 in
        while len(handled) < 4000 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        consumer.stop(10)
    assert sorted(handled, key=lambda p: int(p[1:])) == [f"m{i}" for i in range(4000)]
    assert consumer.stats.lost_by_retention == 0


@pytest.mark.parametrize("encoding", ["plain", "java-kryo"])
def test_the_frontier_written_is_capped_at_the_partitions_retention_floor(
    r: redis.Redis, redis_url: str, encoding: str
) -> None:
    # a pipeline group (no lease, no frontier of its own) at 0: the leased Python group's
    # frontier used to run ahead to its last ack, and Java's frontier trim (XTRIM MINID at
    # the lowest leased frontier) deleted every entry the pipeline had not read
    cfg = MQConfig.from_url(redis_url, encoding=encoding)
    create_topic(r, cfg.keys, TOPIC, 1, groups=(PY,))
    key = cfg.keys.partition(TOPIC, 0)
    for i in range(10):
        r.xadd(key, {"payload": str(i)}, id=f"{1000 + i}-0")
    r.xgroup_create(key, "spark", id="0")
    r.set(cfg.keys.lease(TOPIC, PY, 0), "py-worker", px=60_000)
    ids = _ids(r, key, PY, 10)
    kw = {"topic": TOPIC, "group": PY, "partition": 0, "epoch": None, "frontier": encoding}
    ack(r, cfg.keys, ids=ids, **kw)
    front = cfg.keys.commit_frontier(TOPIC, 0)
    assert frontier_ids(r.hgetall(front)) == {PY: "0-1"}  # spark's floor
    java_housekeeper(r, cfg, 0)
    assert r.xlen(key) == 10
    spark = _ids(r, key, "spark", 6)  # spark reads and acks 6: its floor is after 1005-0
    r.xack(key, "spark", *spark)
    ack(r, cfg.keys, ids=ids[:1], **kw)  # nothing pending: nothing raised
    r.xadd(key, {"payload": "10"}, id="1010-0")
    ack(r, cfg.keys, ids=_ids(r, key, PY, 1), **kw)
    assert frontier_ids(r.hgetall(front)) == {PY: "1005-1"}
    java_housekeeper(r, cfg, 0)
    assert {e[0] for e in r.xrange(key)} >= {f"{1000 + i}-0".encode() for i in range(6, 11)}
