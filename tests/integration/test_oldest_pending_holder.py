"""The oldest pending entry's consumer, from the XPENDING - + 1 the pass and the live read
already send: in the snapshot and the live lag, at no extra command."""

from __future__ import annotations

import pytest
import redis

from mqcore.admin import Admin
from mqcore.config import MQConfig
from mqcore.producer import Producer
from mqcore.topics import Topics
from tests.snapshot_parts import builtins

pytestmark = pytest.mark.redis

EVIL = "<b>c1</b>\u202e"


def test_snapshot_and_live_lag_name_the_consumer_holding_the_oldest_entry(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    Topics(mq_config).create("orders", 1, groups=["g"])
    producer = Producer(mq_config)
    for i in range(3):
        producer.send("orders", f"m{i}", partition=0)
    stream = mq_config.keys.partition("orders", 0)
    r.xreadgroup("g", EVIL, {stream: ">"}, count=1)
    r.xreadgroup("g", "c2", {stream: ">"}, count=2)
    admin = Admin(mq_config, r)
    (topic,) = builtins(admin.snapshot(last_ids=False))["topics"]
    (part,) = topic["groups"][0]["partitions"]
    assert (part["pending"], part["oldest_pending_consumer"]) == (3, EVIL)
    (snap_topic,) = admin.snapshot().topics
    assert snap_topic.groups[0].partitions[0].oldest_pending_consumer == EVIL
    ((live,),) = [g.partitions for g in admin.lag("orders", "g")]
    assert live.oldest_pending_consumer == EVIL
    r.xack(stream, "g", *[e[0] for e in r.xrange(stream)])
    (after,) = admin.snapshot().topics
    assert after.groups[0].partitions[0].oldest_pending_consumer is None
