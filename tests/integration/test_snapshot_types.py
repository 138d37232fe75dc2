"""The snapshot's one type (``mqcore.models``): what a real collector pass stores decodes into
the structs and encodes back to the same JSON, and a value that is not a snapshot is refused
at decode (real Redis, real passes)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest
import redis
from django.conf import settings

from dashboard.clusters import console_keys, reset_caches
from dashboard.collectors.passes import collect_cluster
from mqcore.checkpoints import CheckpointStore
from mqcore.config import MQConfig
from mqcore.models import (
    ClusterSnapshot,
    PipelineMark,
    RetentionRisk,
    Status,
    TopicMemory,
    snapshot_decode,
    snapshot_encode,
)
from tests.integration.raw_java import add_messages, create_topic, java_dlq_letter

pytestmark = [pytest.mark.redis, pytest.mark.django_db]


@pytest.fixture
def java_retention(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The ``default`` cluster with Java's retention (maxlen 150): a retention risk mark."""
    base = dict(settings.MQ_CLUSTERS["default"])
    monkeypatch.setattr(
        settings, "MQ_CLUSTERS", {"default": {**base, "java_retention": {"maxlen": 150}}}
    )
    reset_caches()
    yield
    reset_caches()


def _world(r: redis.Redis, mq_config: MQConfig) -> None:
    """Every part a snapshot has: leases (owned and not), consumers, pending, retries,
    dead letters, a pipeline group, a group at retention risk, an empty topic."""
    keys = mq_config.keys
    create_topic(r, keys, "orders", 2, groups=("g", "sink"))
    create_topic(r, keys, "empty", 1, groups=())
    add_messages(r, keys, "orders", 0, 200)
    add_messages(r, keys, "orders", 1, 3)
    r.xreadgroup("g", "c1", {keys.partition("orders", 0): ">"}, count=2)
    r.set(keys.lease("orders", "g", 0), "c1", px=15000)
    r.set(keys.lease_epoch("orders", "g", 0), 7)
    now = int(time.time() * 1000)
    beat = {"last_seen_ms": now, "partitions": [0], "max_partitions": 4, "host": "h", "pid": 1}
    r.hset(keys.consumers("orders", "g"), "c1", json.dumps(beat))
    r.zadd(keys.retry_zset("orders"), {"a": now - 1000, "b": now + 60000})
    java_dlq_letter(r, keys, "orders", 1, "bad")
    ckpt = CheckpointStore(mq_config)
    kw = {"topic": "orders", "sink": "redis", "group": "sink"}
    ckpt.record_planned("totals", 0, run_id="a", **kw)
    ckpt.record_committed("totals", 0, run_id="a", records=1, acked_ids={"1": "1-0"}, **kw)


def _stored(console_r: redis.Redis) -> bytes:
    raw = console_r.get(console_keys().snapshot("default"))
    assert raw is not None
    return bytes(raw)


def test_a_collector_pass_decodes_into_the_structs_and_encodes_back_the_same(
    r: redis.Redis, mq_config: MQConfig, console_r: redis.Redis, java_retention: None
) -> None:
    _world(r, mq_config)
    for _ in range(2):
        assert collect_cluster("default", claim=False).stored
    raw = _stored(console_r)
    snap = snapshot_decode(raw)
    assert isinstance(snap, ClusterSnapshot)
    assert snapshot_encode(snap) == raw  # byte for byte: no field added, dropped or renamed
    assert json.loads(snapshot_encode(snap)) == json.loads(raw)
    # every part of the shape was there to be checked
    assert snap.cluster == "default"
    empty, orders = snap.topics
    assert (empty.topic, empty.groups, orders.topic) == ("empty", [], "orders")
    assert isinstance(orders.status, Status)
    groups = {g.group: g for g in orders.groups}
    assert isinstance(groups["sink"].pipeline, PipelineMark)
    assert groups["sink"].pipeline.name == "totals"
    assert groups["g"].pipeline is msgspec.UNSET
    assert "pipeline" not in json.loads(raw)["topics"][1]["groups"][0]
    assert isinstance(groups["g"].retention_risk, RetentionRisk)
    assert orders.leases[0].owner == "c1"
    assert orders.consumers[0].partitions_held == [0]
    assert orders.retry.count == 2
    assert orders.dlq_length == 1
    assert isinstance(orders.memory, TopicMemory)
    assert snap.pipelines[0]["pipeline"] == "totals"


@pytest.mark.parametrize(
    "value",
    [
        b"{not json",
        b"[]",
        b'{"taken_at_ms": 1}',
        b'{"taken_at_ms": "soon", "topics": []}',
        b'{"taken_at_ms": 1, "topics": ["not a topic"]}',
        b'{"taken_at_ms": 1, "topics": [{"topic": "t", "groups": []}]}',
    ],
)
def test_what_is_not_a_snapshot_is_refused_at_decode(value: bytes) -> None:
    with pytest.raises(msgspec.MsgspecError):
        snapshot_decode(value)


def test_a_snapshot_built_in_code_encodes_with_the_stored_field_names() -> None:
    snap = ClusterSnapshot(taken_at_ms=1, topics=[])
    data: dict[str, Any] = json.loads(snapshot_encode(snap))
    assert list(data) == [
        "taken_at_ms", "topics", "redis_run_id", "elapsed_ms", "commands", "pipelines", "cluster"
    ]  # fmt: skip
    assert snapshot_decode(snapshot_encode(snap)) == snap
