"""Fenced ack / retry / dead-letter scripts against a real Redis (SCHEMA layout)."""

from __future__ import annotations

import json

import pytest
import redis

from mqcore.acks import PendingEntry, ack, dead_letter, schedule_retry
from mqcore.config import MQConfig
from mqcore.errors import FencedError, InvalidArgumentError, UnknownMessageError

pytestmark = pytest.mark.redis

TOPIC, GROUP = "orders", "default-group"


def _setup(r: redis.Redis, cfg: MQConfig, entries: int = 3, partition: int = 1) -> list[str]:
    keys = cfg.keys
    stream = keys.partition(TOPIC, partition)
    r.xgroup_create(stream, GROUP, id="0", mkstream=True)
    ids = []
    for i in range(entries):
        entry_id = r.xadd(
            stream,
            {
                "payload": f"p{i}",
                "timestamp": "2024-01-01T00:00:00.000Z",
                "retryCount": "0",
                "maxRetries": "3",
                "topic": TOPIC,
                "partitionId": str(partition),
                "key": f"k{i}",
                "headers": json.dumps({"partitionId": str(partition), "trace": "t"}),
            },
        )
        ids.append(entry_id.decode())
    r.xreadgroup(GROUP, "c1", {stream: ">"}, count=100)
    return ids


def test_ack_counts_and_is_fenced_by_epoch(r: redis.Redis, mq_config: MQConfig) -> None:
    keys = mq_config.keys
    ids = _setup(r, mq_config)
    r.set(keys.lease_epoch(TOPIC, GROUP, 1), 5)
    client = mq_config.client()
    with pytest.raises(FencedError):
        ack(client, keys, topic=TOPIC, group=GROUP, partition=1, ids=ids, epoch=4)
    assert r.xpending(keys.partition(TOPIC, 1), GROUP)["pending"] == 3
    assert ack(client, keys, topic=TOPIC, group=GROUP, partition=1, ids=ids[:2], epoch=5) == 2
    assert ack(client, keys, topic=TOPIC, group=GROUP, partition=1, ids=ids, epoch=5) == 1
    assert r.xpending(keys.partition(TOPIC, 1), GROUP)["pending"] == 0
    assert r.xlen(keys.partition(TOPIC, 1)) == 3


def test_ack_without_epoch_key_is_fenced_and_delete_removes(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    keys = mq_config.keys
    ids = _setup(r, mq_config)
    client = mq_config.client()
    with pytest.raises(FencedError):
        ack(client, keys, topic=TOPIC, group=GROUP, partition=1, ids=ids, epoch=1)
    kw = {"topic": TOPIC, "group": GROUP, "partition": 1, "ids": ids, "epoch": None}
    assert ack(client, keys, **kw, policy="immediate") == 3
    assert r.xlen(keys.partition(TOPIC, 1)) == 0


def test_ack_rejects_bad_ids_before_writing(r: redis.Redis, mq_config: MQConfig) -> None:
    keys = mq_config.keys
    ids = _setup(r, mq_config)
    with pytest.raises(InvalidArgumentError):
        ack(
            mq_config.client(),
            keys,
            topic=TOPIC,
            group=GROUP,
            partition=1,
            ids=[ids[0], "x"],
            epoch=None,
        )
    assert r.xpending(keys.partition(TOPIC, 1), GROUP)["pending"] == 3


def test_schedule_retry_writes_schema_item_and_acks(r: redis.Redis, mq_config: MQConfig) -> None:
    keys = mq_config.keys
    ids = _setup(r, mq_config)
    r.set(keys.lease_epoch(TOPIC, GROUP, 1), 2)
    fields = {
        k.decode(): v for k, v in r.xrange(keys.partition(TOPIC, 1), ids[0], ids[0])[0][1].items()
    }
    client = mq_config.client()
    item_id = schedule_retry(
        client, keys, PendingEntry(TOPIC, GROUP, 1, ids[0], 2), fields=fields, due_ms=123456
    )
    item_key = keys.retry_item(TOPIC, item_id)
    assert r.zscore(keys.retry_zset(TOPIC), item_key) == 123456
    item = {k.decode(): v.decode() for k, v in r.hgetall(item_key).items()}
    assert set(item) == {
        "topic", "partitionId", "payload", "key", "headers", "retryCount", "maxRetries",
        "originalMessageId",
    }  # fmt: skip
    assert item["retryCount"] == "1"
    assert item["partitionId"] == "1"
    assert item["originalMessageId"] == ids[0]
    headers = json.loads(item["headers"])
    assert headers["x-original-message-id"] == ids[0]
    assert headers["trace"] == "t"
    pending = r.xpending_range(keys.partition(TOPIC, 1), GROUP, "-", "+", 10)
    assert [p["message_id"].decode() for p in pending] == ids[1:]
    # a second attempt on an entry that is no longer pending writes nothing
    with pytest.raises(UnknownMessageError):
        schedule_retry(
            client, keys, PendingEntry(TOPIC, GROUP, 1, ids[0], 2), fields=fields, due_ms=1
        )
    assert r.zcard(keys.retry_zset(TOPIC)) == 1
    # stale epoch: nothing written, still pending
    with pytest.raises(FencedError):
        schedule_retry(
            client, keys, PendingEntry(TOPIC, GROUP, 1, ids[1], 1), fields=fields, due_ms=1
        )
    assert r.zcard(keys.retry_zset(TOPIC)) == 1
    assert r.xpending(keys.partition(TOPIC, 1), GROUP)["pending"] == 2


def test_schedule_retry_direct_readds_to_partition(r: redis.Redis, mq_config: MQConfig) -> None:
    keys = mq_config.keys
    ids = _setup(r, mq_config, entries=1)
    fields = {k.decode(): v for k, v in r.xrange(keys.partition(TOPIC, 1))[0][1].items()}
    new_id = schedule_retry(
        mq_config.client(),
        keys,
        PendingEntry(TOPIC, GROUP, 1, ids[0], None),
        fields=fields,
        due_ms=0,
        direct=True,
    )
    entry = {
        k.decode(): v.decode()
        for k, v in r.xrange(keys.partition(TOPIC, 1), new_id, new_id)[0][1].items()
    }
    assert entry["retryCount"] == "1"
    assert entry["originalMessageId"] == ids[0]
    assert entry["payload"] == "p0"
    assert json.loads(entry["headers"])["x-original-message-id"] == ids[0]
    assert r.zcard(keys.retry_zset(TOPIC)) == 0


def test_dead_letter_writes_exact_schema_fields_with_real_partition(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    keys = mq_config.keys
    ids = _setup(r, mq_config, partition=2)
    r.set(keys.lease_epoch(TOPIC, GROUP, 2), 7)
    client = mq_config.client()
    with pytest.raises(FencedError):
        dead_letter(client, keys, PendingEntry(TOPIC, GROUP, 2, ids[0], 6), reason="boom")
    assert r.xlen(keys.dlq(TOPIC)) == 0
    dlq_id = dead_letter(
        client,
        keys,
        PendingEntry(TOPIC, GROUP, 2, ids[0], 7),
        reason="boom <script>",
        error_type="ValueError",
    )
    assert dlq_id is not None
    ((got_id, raw),) = r.xrange(keys.dlq(TOPIC))
    assert got_id.decode() == dlq_id
    entry = {k.decode(): v.decode() for k, v in raw.items()}
    assert set(entry) == {
        "originalTopic", "payload", "timestamp", "failedAt", "retryCount", "maxRetries",
        "partitionId", "headers", "originalMessageId",
    }  # fmt: skip
    assert entry["partitionId"] == "2"
    assert entry["originalTopic"] == TOPIC
    assert entry["payload"] == "p0"
    assert entry["timestamp"] == "2024-01-01T00:00:00.000Z"
    assert entry["originalMessageId"] == ids[0]
    headers = json.loads(entry["headers"])
    assert headers["partitionId"] == "2"
    assert headers["key"] == "k0"
    assert headers["trace"] == "t"
    assert headers["x-runtime-error-message"] == "boom <script>"
    assert headers["x-runtime-error-type"] == "ValueError"
    assert r.xpending(keys.partition(TOPIC, 2), GROUP)["pending"] == 2
    with pytest.raises(UnknownMessageError):
        dead_letter(client, keys, PendingEntry(TOPIC, GROUP, 2, ids[0], None), reason="x")


def test_dead_letter_of_trimmed_entry_acks_and_returns_none(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    keys = mq_config.keys
    ids = _setup(r, mq_config, partition=0)
    r.xdel(keys.partition(TOPIC, 0), ids[1])
    client = mq_config.client()
    assert (
        dead_letter(client, keys, PendingEntry(TOPIC, GROUP, 0, ids[1], None), reason="x") is None
    )
    assert r.xlen(keys.dlq(TOPIC)) == 0
    assert r.xpending(keys.partition(TOPIC, 0), GROUP)["pending"] == 2
    # with the fields given (binary payload), the letter is written from them
    dlq_id = dead_letter(
        client,
        keys,
        PendingEntry(TOPIC, GROUP, 0, ids[2], None),
        reason="bad",
        fields={"payload": b"\xff\x00bin", "retryCount": "3", "maxRetries": "3"},
    )
    raw = r.xrange(keys.dlq(TOPIC), dlq_id, dlq_id)[0][1]
    assert raw[b"payload"] == b"\xff\x00bin"
    assert raw[b"retryCount"] == b"3"
    assert raw[b"partitionId"] == b"0"
