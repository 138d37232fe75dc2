"""Admin.snapshot / leases / consumers / retry backlog against a real Redis."""

from __future__ import annotations

import json
import time

import pytest
import redis

from mqcore.admin import Admin
from mqcore.config import MQConfig
from mqcore.models import LagExactness
from tests.integration.raw_java import add_messages, create_topic, java_dlq_letter
from tests.snapshot_parts import builtins

pytestmark = pytest.mark.redis


def _world(r: redis.Redis, mq_config: MQConfig) -> None:
    keys = mq_config.keys
    create_topic(r, keys, "orders", 2, groups=("g",))
    create_topic(r, keys, "empty", 1, groups=())
    add_messages(r, keys, "orders", 0, 5)
    add_messages(r, keys, "orders", 1, 3)
    r.xreadgroup("g", "c1", {keys.partition("orders", 0): ">"}, count=2)
    r.set(keys.lease("orders", "g", 0), "c1", px=15000)
    r.set(keys.lease_epoch("orders", "g", 0), 7)
    now = int(time.time() * 1000)
    beat = {"last_seen_ms": now, "partitions": [0], "max_partitions": 4, "host": "h", "pid": 1}
    r.hset(keys.consumers("orders", "g"), "c1", json.dumps(beat))
    r.zadd(keys.retry_zset("orders"), {"a": now - 1000, "b": now + 60000})
    java_dlq_letter(r, keys, "orders", 1, "bad")


def test_snapshot_gathers_every_topic(r: redis.Redis, mq_config: MQConfig) -> None:
    _world(r, mq_config)
    snap = Admin(mq_config, r).snapshot()
    assert [t.topic for t in snap.topics] == ["empty", "orders"]
    orders = snap.topics[1]
    assert orders.error is None
    assert (orders.partitions, orders.length, orders.dlq_length) == (2, 8, 1)
    assert orders.partition_lengths == [5, 3]
    g = orders.groups[0]
    assert (g.group, g.lag, g.pending, g.lag_exact) == ("g", 6, 2, True)
    assert g.partitions[0].oldest_pending_ms is not None
    assert g.lag_ms is not None
    lease0 = orders.leases[0]
    assert (lease0.owner, lease0.epoch) == ("c1", 7)
    assert lease0.ttl_ms is not None
    assert orders.leases[1].owner is None
    assert orders.consumers[0].name == "c1"
    assert orders.consumers[0].partitions_held == [0]
    assert orders.retry.count == 2
    assert orders.retry.oldest_due_at_ms is not None
    assert orders.retry.next_due_at_ms is not None
    assert orders.retry.next_due_at_ms > orders.retry.oldest_due_at_ms
    assert snap.redis_run_id
    assert snap.commands > 0
    assert snap.topics[0].groups == []
    assert snap.topics[0].error is None


def test_snapshot_null_lag_is_bounded_and_marked(r: redis.Redis, mq_config: MQConfig) -> None:
    keys = mq_config.keys
    create_topic(r, keys, "t", 1, groups=("g",))
    ids = add_messages(r, keys, "t", 0, 6)
    r.xdel(keys.partition("t", 0), ids[2])
    part = Admin(mq_config, r).snapshot().topics[0].groups[0].partitions[0]
    assert part.lag == 5
    assert part.exactness == LagExactness.COUNTED


def test_one_broken_topic_does_not_spoil_the_others(r: redis.Redis, mq_config: MQConfig) -> None:
    _world(r, mq_config)
    keys = mq_config.keys
    r.sadd(keys.registry(), "broken")
    r.hset(keys.meta("broken"), "partitionCount", 1)
    r.set(keys.partition("broken", 0), "not a stream")
    snap = Admin(mq_config, r).snapshot()
    by_name = {t.topic: t for t in snap.topics}
    assert by_name["broken"].error
    assert "WRONGTYPE" in by_name["broken"].error
    assert by_name["orders"].error is None
    assert by_name["orders"].length == 8


def test_leases_consumers_retry_views(r: redis.Redis, mq_config: MQConfig) -> None:
    _world(r, mq_config)
    admin = Admin(mq_config, r)
    leases = admin.leases("orders")
    assert [(x.partition, x.owner, x.epoch) for x in leases] == [(0, "c1", 7), (1, None, 0)]
    assert leases[0].ttl_ms is not None
    assert 0 < leases[0].ttl_ms <= 15000
    consumers = admin.consumers("orders", "g")
    assert len(consumers) == 1
    c1 = consumers[0]
    assert (c1.name, c1.pending, c1.max_partitions, c1.partitions_held) == ("c1", 2, 4, [0])
    assert c1.last_seen_ms is not None
    backlog = admin.retry_backlog("orders")
    assert backlog.count == 2


def test_second_pass_sees_new_entries_and_deliveries(r: redis.Redis, mq_config: MQConfig) -> None:
    """Ids reused from the previous pass (unchanged partitions) never hide a change."""
    keys = mq_config.keys
    create_topic(r, keys, "t", 1, groups=("g",))
    ids = add_messages(r, keys, "t", 0, 3)
    admin = Admin(mq_config, r)
    first = builtins(admin.snapshot())["topics"][0]
    assert first["partition_last_ids"] == [ids[-1]]
    again = builtins(admin.snapshot())["topics"][0]
    assert again["partition_last_ids"] == [ids[-1]]
    assert again["groups"][0]["partitions"][0]["lag"] == 3
    newer = add_messages(r, keys, "t", 0, 1)
    r.xreadgroup("g", "c1", {keys.partition("t", 0): ">"}, count=2)
    snap = admin.snapshot()
    part = snap.topics[0].groups[0].partitions[0]
    assert snap.topics[0].partition_last_ids == [newer[-1]]
    assert (part.lag, part.last_delivered_id, part.pending) == (2, ids[1], 2)
    assert snap.topics[0].length == 4
    assert builtins(admin.snapshot())["topics"][0]["partition_last_ids"] == [newer[-1]]


def test_appends_to_a_lagging_group_do_not_reread_its_first_undelivered_entry(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    """A stalled group whose producer goes on: the first undelivered entry is where it was,
    so the next pass does not read it again; removing it (XDEL) makes the pass read again."""
    keys = mq_config.keys
    stream = keys.partition("t", 0)
    create_topic(r, keys, "t", 1, groups=("g",))
    ids = add_messages(r, keys, "t", 0, 3)
    r.xreadgroup("g", "c1", {stream: ">"}, count=1)
    admin = Admin(mq_config, r)

    def lag_row() -> dict:
        return builtins(admin.snapshot())["topics"][0]["groups"][0]["partitions"][0]

    def xranges() -> int:
        return int(r.info("commandstats").get("cmdstat_xrange", {}).get("calls", 0))

    first = lag_row()
    time.sleep(0.002)
    add_messages(r, keys, "t", 0, 2)
    r.config_resetstat()
    again = lag_row()
    assert xranges() == 0
    assert again["lag"] == 4
    assert again["lag_ms"] >= first["lag_ms"]  # still the age of ids[1]
    r.xtrim(stream, minid=ids[2], approximate=False)  # the first undelivered is now ids[2]
    r.config_resetstat()
    moved = lag_row()
    assert xranges() == 1
    assert moved["lag_ms"] <= int(time.time() * 1000) - int(ids[2].split("-")[0])


def test_recreated_stream_with_the_same_counts_is_read_again(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    keys = mq_config.keys
    admin = Admin(mq_config, r)
    create_topic(r, keys, "t", 1, groups=("g",))
    old = add_messages(r, keys, "t", 0, 3)
    assert builtins(admin.snapshot())["topics"][0]["partition_last_ids"] == [old[-1]]
    r.flushdb()  # deleted and recreated: same topic, group, length and entries-added
    time.sleep(0.002)
    create_topic(r, keys, "t", 1, groups=("g",))
    new = add_messages(r, keys, "t", 0, 3)
    assert new[-1] != old[-1]
    topic = builtins(admin.snapshot())["topics"][0]
    assert topic["partition_last_ids"] == [new[-1]]
    part = topic["groups"][0]["partitions"][0]
    assert part["lag_ms"] <= int(time.time() * 1000) - int(new[0].split("-")[0])


def test_leases_are_read_per_topic_and_ttls_only_when_owned(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    """One MGET of a topic's lease and epoch keys; PTTL only of the leases that have an owner."""
    keys = mq_config.keys
    create_topic(r, keys, "t", 4, groups=("g", "h"))
    r.set(keys.lease("t", "g", 1), "c1", px=60_000)
    r.set(keys.lease("t", "h", 3), "c2")  # no TTL (Java's SETNX before EXPIRE)
    r.set(keys.lease_epoch("t", "h", 2), 5)
    r.config_resetstat()
    topic = builtins(Admin(mq_config, r).snapshot())["topics"][0]
    stats = r.info("commandstats")
    assert stats["cmdstat_mget"]["calls"] == 1
    assert stats["cmdstat_pttl"]["calls"] == 2
    assert "cmdstat_get" not in stats
    leases = {(x["group"], x["partition"]): x for x in topic["leases"]}
    assert len(leases) == 8
    assert (leases["g", 1]["owner"], leases["g", 1]["ttl_ms"] > 0) == ("c1", True)
    assert (leases["h", 3]["owner"], leases["h", 3]["ttl_ms"]) == ("c2", None)
    assert (leases["h", 2]["owner"], leases["h", 2]["epoch"]) == (None, 5)
    assert [x["owner"] for x in topic["leases"]].count(None) == 6


def test_last_ids_told_by_a_group_cost_no_read_and_can_be_left_out(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    """A caught-up group tells its partition's last id, and so does the first undelivered
    entry of a group with lag 1; the others take an XREVRANGE, or stay None when the caller
    asked for no last ids (what the collector does)."""
    keys = mq_config.keys
    create_topic(r, keys, "t", 4, groups=("g",))
    ids = [add_messages(r, keys, "t", p, 3) for p in range(3)]  # partition 3 stays empty
    r.xreadgroup("g", "c1", {keys.partition("t", 0): ">"}, count=3)  # caught up
    r.xreadgroup("g", "c1", {keys.partition("t", 1): ">"}, count=2)  # lag 1
    admin = Admin(mq_config, r)

    def reverse_reads() -> int:
        return int(r.info("commandstats").get("cmdstat_xrevrange", {}).get("calls", 0))

    r.config_resetstat()
    lean = builtins(admin.snapshot(last_ids=False))["topics"][0]
    assert reverse_reads() == 0
    assert lean["partition_last_ids"] == [ids[0][-1], ids[1][-1], None, "0-0"]
    rows = {p["partition"]: p for p in lean["groups"][0]["partitions"]}
    assert [rows[p]["last_id"] for p in range(4)] == [ids[0][-1], ids[1][-1], None, "0-0"]
    assert rows[2]["lag"] == 3  # the lag is whole
    assert rows[2]["lag_ms"] is not None

    r.config_resetstat()
    full = builtins(Admin(mq_config, r).snapshot())["topics"][0]
    assert reverse_reads() == 1  # partition 2 only
    assert full["partition_last_ids"] == [ids[0][-1], ids[1][-1], ids[2][-1], "0-0"]
    snap = Admin(mq_config, r).snapshot(last_ids=False)
    assert snap.topics[0].partition_last_ids == [ids[0][-1], ids[1][-1], None, "0-0"]


def test_a_group_one_behind_a_caught_up_group_costs_no_read(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    """Beside a caught-up group (its position is the last entry), the first undelivered entry
    of a group with lag 1 is that last entry: its time lag needs no XRANGE."""
    keys = mq_config.keys
    stream = keys.partition("t", 0)
    create_topic(r, keys, "t", 1, groups=("g", "h"))
    ids = add_messages(r, keys, "t", 0, 3)
    r.xreadgroup("g", "c1", {stream: ">"}, count=3)
    r.xreadgroup("h", "c2", {stream: ">"}, count=2)
    r.config_resetstat()
    topic = builtins(Admin(mq_config, r).snapshot())["topics"][0]
    stats = r.info("commandstats")
    assert "cmdstat_xrange" not in stats
    assert "cmdstat_xrevrange" not in stats
    assert topic["partition_last_ids"] == [ids[-1]]
    h = next(g for g in topic["groups"] if g["group"] == "h")["partitions"][0]
    assert h["lag"] == 1
    age = int(time.time() * 1000) - int(ids[-1].split("-")[0])
    assert 0 <= h["lag_ms"] <= age + 5  # the age of ids[-1], not of ids[1]
