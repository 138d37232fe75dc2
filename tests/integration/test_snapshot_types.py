"""The snapshot's one type (``mqcore.models``): what a real collector pass stores decodes into
the structs and encodes back to the same JSON, and a value that is not a snapshot is refused
at decode (real Redis, real passes)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest
import redis
from django.conf import settings

from dashboard.clusters import console_keys, reset_caches
from dashboard.collectors.passes import collect_cluster
from mqcore.checkpoints import CheckpointStore, Writer, pipeline_summary
from mqcore.config import MQConfig
from mqcore.models import (
    ClusterSnapshot,
    PipelineMark,
    RetentionRisk,
    Status,
    TopicMemory,
    snapshot_decode,
    snapshot_encode,
    snapshot_encode_parts,
)
from tests import snapshot_parts as parts
from tests.integration.test_admin_snapshot import _world as admin_world

pytestmark = [pytest.mark.redis, pytest.mark.django_db]


@pytest.fixture
def java_retention(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The ``default`` cluster with Java's retention (maxlen 2): a retention risk mark."""
    base = dict(settings.MQ_CLUSTERS["default"])
    monkeypatch.setattr(
        settings, "MQ_CLUSTERS", {"default": {**base, "java_retention": {"maxlen": 2}}}
    )
    reset_caches()
    yield
    reset_caches()


def _world(r: redis.Redis, mq_config: MQConfig) -> None:
    """Every part a snapshot has: leases (owned and not), consumers, pending, retries,
    dead letters, an empty topic (test_admin_snapshot's world), a pipeline group, a group
    at retention risk (Java keeps 2 entries, group g has 6 to read)."""
    admin_world(r, mq_config)
    for p in range(2):
        r.xgroup_create(mq_config.keys.partition("orders", p), "sink", id="$")
    ckpt = CheckpointStore(mq_config)
    kw = {"topic": "orders", "sink": "redis", "group": "sink"}
    ckpt.record_planned("totals", 0, Writer(run_id="a", **kw))
    ckpt.record_committed("totals", 0, Writer(run_id="a", **kw), records=1, acked_ids={})


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
    assert snap.pipelines[0].pipeline == "totals"


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


@pytest.mark.parametrize("count", [0, 1, 3, 7])
def test_a_snapshot_encoded_in_parts_is_the_same_bytes(count: int) -> None:
    topics = [parts.topic(f"t{n}", [parts.group("g", [parts.part(0, n)])]) for n in range(count)]
    snap = parts.snapshot(topics, 5, redis_run_id="r", cluster="c")
    chunks = list(snapshot_encode_parts(snap, per_part=2))
    assert b"".join(chunks) == snapshot_encode(snap)
    assert len(chunks) == 2 + (count + 1) // 2


def test_a_stored_value_that_is_not_a_snapshot_is_refused_once_per_version(
    console_r: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dashboard.clusters import console_redis
    from dashboard.store import ConsoleStore
    from dashboard.store import console as store_console

    cs = ConsoleStore(console_redis(), console_keys())
    odd = {"taken_at_ms": 1, "topics": [{"topic": "t", "lag": "NaN?"}]}
    console_r.set(console_keys().snapshot("odd"), json.dumps(odd))  # not a collector's value
    console_r.set(console_keys().snapshot_version("odd"), "1000:odd")
    decodes: list[bytes] = []

    def counted(raw: bytes) -> ClusterSnapshot:
        decodes.append(raw)
        return snapshot_decode(raw)

    monkeypatch.setattr(store_console, "snapshot_decode", counted)
    first = cs.snapshot_read("odd")
    assert first.snapshot is None
    assert first.unreadable is not None
    assert "$.topics[0]" in first.unreadable
    assert cs.snapshot_get("odd") is None
    assert cs.snapshot_read("odd") is first  # refused once: the version's answer is kept
    assert len(decodes) == 1
    assert cs.snapshot_read("never-collected") == (None, None)  # no snapshot is not unreadable


def test_a_pipeline_summary_encodes_as_the_summary_dict_did(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    """A pipeline planned and then completed (the usual history): its typed summary is the
    same JSON, byte for byte, as the dict the summary was before it was typed (the meta
    hash's fields in their order, then the missing ones with their defaults)."""
    _world(r, mq_config)
    raw = r.hgetall(mq_config.keys.checkpoint_meta("totals"))
    old: dict[str, Any] = {k.decode(): v.decode() for k, v in raw.items()}
    ints = ("triggered", "in_progress", "completed", "failed", "restored", "last_planned_id")
    ints += ("last_completed_id", "last_completed_at_ms", "last_failed_id", "last_failed_at_ms")
    for name in (*ints, "last_restore_id", "last_restore_at_ms"):
        old[name] = int(old[name]) if old.get(name) else None
    for name in ("triggered", "in_progress", "completed", "failed", "restored"):
        old[name] = max(old[name] or 0, 0)
    old["end_offsets"] = json.loads(old["end_offsets"])
    for name in ("last_failure_reason", "last_restore_outcome", "last_restore_from_run"):
        old.setdefault(name, "")
    summary = pipeline_summary("totals", raw)
    assert msgspec.json.encode(summary) == msgspec.json.encode(old)
