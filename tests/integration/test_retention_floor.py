"""The retention floor in Python (mqcore/retention/floor.py) on a real redis-server, and
the scripts' twin (lib/floor.lua) agreeing with it."""

from __future__ import annotations

import pytest
import redis

from mqcore.config import MQConfig
from mqcore.retention import RetentionPolicy, trim_partition
from mqcore.retention.floor import group_floor, id_after, partition_floor, partition_floors
from tests.integration.raw_java import create_topic

pytestmark = pytest.mark.redis


def test_id_after_and_group_floor() -> None:
    assert id_after("5-3") == "5-4"
    assert id_after(f"5-{2**53 - 1}") == f"5-{2**53 - 1}"  # as lib/ids.lua: keep the entry
    assert group_floor("0-0", None) == "0-1"
    assert group_floor("9-0", "3-0") == "3-0"
    assert group_floor("9-0", None) == "9-1"


def test_every_group_counts_leased_or_not(r: redis.Redis, mq_config: MQConfig) -> None:
    create_topic(r, mq_config.keys, "orders", 1, groups=("app", "busy"))
    key = mq_config.keys.partition("orders", 0)
    for i in range(10):
        r.xadd(key, {"payload": str(i)}, id=f"{100 + i}-0")
    got = r.xreadgroup("app", "c", {key: ">"})
    r.xack(key, "app", *[e[0] for e in got[0][1]])
    r.xreadgroup("busy", "c", {key: ">"}, count=6)
    r.xack(key, "busy", "100-0", "101-0", "103-0")  # 102-0 pending first
    assert [(f.group, f.floor_id, f.lowest_pending_id) for f in partition_floors(r, key)] == [
        ("app", "109-1", None),
        ("busy", "102-0", "102-0"),
    ]
    low = partition_floor(partition_floors(r, key))
    assert low is not None
    assert (low.group, low.floor_id) == ("busy", "102-0")
    r.xgroup_create(key, "spark", id="0")  # a pipeline group: no lease, never read
    floors = partition_floors(r, key)
    low = partition_floor(floors)
    assert low is not None
    assert (low.group, low.floor_id) == ("spark", "0-1")
    ignored = partition_floor(floors, ignored=["spark"])
    assert ignored is not None
    assert ignored.group == "busy"
    # the housekeeper (lib/floor.lua) stops at the same group and id
    got_trim = trim_partition(r, mq_config.keys, "orders", 0, RetentionPolicy.build(maxlen=1))
    assert (got_trim.deleted, got_trim.held_by) == (0, "spark")
    policy = RetentionPolicy.build(maxlen=1, ignore_groups=["spark"])
    got_trim = trim_partition(r, mq_config.keys, "orders", 0, policy)
    assert (got_trim.deleted, got_trim.held_by) == (2, "busy")
    assert r.xrange(key, count=1)[0][0] == b"102-0"
    assert partition_floors(r, mq_config.keys.partition("orders", 7)) == []  # no stream
