"""Every mqcore ack raises the group's commit frontier (in the deployment's encoding), never
past an entry the group still holds pending, so Java's retention housekeeper, which trims
each partition below the lowest frontier of the groups holding a lease, loses nothing of a
Python group that is behind."""

from __future__ import annotations

import time

import pytest
import redis

from mqcore.acks import ack
from mqcore.checkpoints import CheckpointStore, Writer
from mqcore.codec import kryo
from mqcore.config import MQConfig
from mqcore.consumer import Consumer, ConsumerOptions, Outcome
from mqcore.lease_keeper import LeaseKeeper
from mqcore.retention.view import frontier_ids
from tests.integration.raw_java import create_topic

pytestmark = pytest.mark.redis
TOPIC, JAVA, PY = "orders", "java-group", "python-group"
PIPE = "order_totals.redis"  # a pipeline's checkpoint name, also its consumer group


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


def java_frontiers(r: redis.Redis, cfg: MQConfig, partition: int) -> dict[str, str] | None:
    """The partition's frontier hash as Java reads it: every field and value through Redisson's
    Kryo codec; None when one does not decode (Java then skips the partition's trim)."""
    out: dict[str, str] = {}
    for field, value in r.hgetall(cfg.keys.commit_frontier(TOPIC, partition)).items():
        try:
            out[str(kryo.decode(field))] = str(kryo.decode(value))
        except kryo.KryoError:
            return None
    return out


def java_housekeeper(r: redis.Redis, cfg: MQConfig, partition: int) -> None:
    """StreamRetentionHousekeeper's frontier trim, as its Java code does it: the lowest
    frontier of the groups holding a live lease on the partition; groups without one are
    not counted."""
    frontiers = java_frontiers(r, cfg, partition)
    if frontiers is None:
        return
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


@pytest.mark.parametrize("path", ["inline", "journaled", "cluster"])
def test_a_pipeline_commit_writes_the_frontier_java_reads(
    r: redis.Redis, redis_url: str, path: str
) -> None:
    """On a java-kryo deployment a pipeline's commit writes its frontier in Java's codec (and
    drops the plain field mqcore wrote before), on each commit path."""
    cfg = MQConfig.from_url(redis_url, encoding="java-kryo")
    create_topic(r, cfg.keys, TOPIC, 1, groups=(PIPE,))
    key, front = cfg.keys.partition(TOPIC, 0), cfg.keys.commit_frontier(TOPIC, 0)
    for i in range(10):
        r.xadd(key, {"payload": str(i)}, id=f"{1000 + i}-0")
    r.hset(front, PIPE, "999-0")  # a plain field, as mqcore wrote it before
    store = CheckpointStore(cfg)
    if path == "cluster":  # Redis Cluster: the position moves after the commit, per partition
        store.set_group_position(TOPIC, PIPE, {"0": "1004-0"})
    else:
        store.record_planned(PIPE, 0, Writer(run_id="a", topic=TOPIC, sink="redis", group=PIPE))
        assert store.record_committed(
            PIPE,
            0,
            Writer(run_id="a", topic=TOPIC, sink="redis", group=PIPE),
            records=5,
            acked_ids={"0": "1004-0"},
            outputs=[cfg.keys.sink_output(PIPE, "totals")],
            increments=[(1, "a", 1), (1, "b", 2)],
            chunk=1 if path == "journaled" else 250,
        )
    assert r.hgetall(front) == {kryo.encode(PIPE): kryo.encode("1004-0")}
    assert java_frontiers(r, cfg, 0) == {PIPE: "1004-0"}
    assert r.xinfo_groups(key)[0]["last-delivered-id"] == b"1004-0"


def test_a_pipeline_commit_on_a_plain_deployment_writes_a_plain_frontier(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    create_topic(r, mq_config.keys, TOPIC, 1, groups=(PIPE,))
    r.xadd(mq_config.keys.partition(TOPIC, 0), {"payload": "x"}, id="1000-0")
    CheckpointStore(mq_config).set_group_position(TOPIC, PIPE, {"0": "1000-0"})
    assert r.hgetall(mq_config.keys.commit_frontier(TOPIC, 0)) == {PIPE.encode(): b"1000-0"}


def test_java_trims_nothing_a_running_pipeline_has_not_committed(
    r: redis.Redis, redis_url: str
) -> None:
    """While a pipeline runs it holds its leases (LeaseKeeper) and its frontier is written
    from its first lease and on every commit: Java's frontier trim keeps all it has not
    committed. Stopped, it holds no lease and Java ignores it (nothing we can change)."""
    cfg = MQConfig.from_url(redis_url, encoding="java-kryo")
    create_topic(r, cfg.keys, TOPIC, 1, groups=(JAVA, PIPE))
    key = cfg.keys.partition(TOPIC, 0)
    pipe = r.pipeline(transaction=False)
    for i in range(1000):
        pipe.xadd(key, {"payload": f"m{i}"}, id=f"{1000 + i}-0")
    pipe.execute()
    # the Java group is far ahead: its lease and Kryo frontier at the 900th entry
    r.hset(cfg.keys.commit_frontier(TOPIC, 0), kryo.encode(JAVA), kryo.encode("1899-0"))
    r.set(cfg.keys.lease(TOPIC, JAVA, 0), "java-worker-1", px=60_000)
    keeper = LeaseKeeper(cfg, topic=TOPIC, group=PIPE)
    keeper.start()
    try:
        java_housekeeper(r, cfg, 0)  # before the first commit: the seeded frontier, 0-0
        assert r.xlen(key) == 1000
        store = CheckpointStore(cfg)
        store.record_planned(PIPE, 0, Writer(run_id="a", topic=TOPIC, sink="redis", group=PIPE))
        store.record_committed(
            PIPE,
            0,
            Writer(run_id="a", topic=TOPIC, sink="redis", group=PIPE),
            records=300,
            acked_ids={"0": "1299-0"},
        )
        java_housekeeper(r, cfg, 0)
        assert len(r.xrange(key, "(1299-0", "+")) == 700  # everything not committed is kept
    finally:
        keeper.stop()
    assert r.get(cfg.keys.lease(TOPIC, PIPE, 0)) is None
    java_housekeeper(r, cfg, 0)  # stopped: Java trims by its own group's frontier
    assert len(r.xrange(key, "(1299-0", "+")) < 700
