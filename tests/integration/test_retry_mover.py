import json
import threading
import time

import pytest
import redis

from mqcore.config import MQConfig
from mqcore.retry import RetryMover
from mqcore.topics import Topics
from tests.integration.retry_items import schedule

pytestmark = pytest.mark.redis

NOW = 1_700_000_000_000


@pytest.fixture
def mover(mq_config: MQConfig) -> RetryMover:
    Topics(mq_config).create("orders", 2)
    return RetryMover(mq_config)


def _entries(r: redis.Redis, partition: int) -> list[dict[str, str]]:
    return [
        {k.decode(): v.decode() for k, v in fields.items()}
        for _, fields in r.xrange(f"stream:topic:orders:p:{partition}")
    ]


def test_due_items_go_back_with_java_fields(
    mover: RetryMover, r: redis.Redis, mq_config: MQConfig
) -> None:
    ks = mq_config.keys
    due = schedule(r, ks, "orders", 1, "p1", due_ms=NOW - 5, key="k", original_id="5-0")
    later = schedule(r, ks, "orders", 0, "p2", due_ms=NOW + 60_000)
    assert mover.move_due("orders", now_ms=NOW) == 1
    [entry] = _entries(r, 1)
    assert entry["payload"] == "p1"
    assert entry["retryCount"] == "1"
    assert entry["maxRetries"] == "3"
    assert entry["topic"] == "orders"
    assert entry["partitionId"] == "1"
    assert entry["key"] == "k"
    assert entry["originalMessageId"] == "5-0"
    assert json.loads(entry["headers"])["x-original-message-id"] == "5-0"
    assert entry["timestamp"].endswith("Z")
    assert not r.exists(due)
    assert r.zrange(ks.retry_zset("orders"), 0, -1) == [later.encode()]
    assert _entries(r, 0) == []
    assert mover.move_due("orders", now_ms=NOW) == 0


def test_empty_topic_items_are_dropped_and_batches_are_bounded(
    mq_config: MQConfig, r: redis.Redis
) -> None:
    Topics(mq_config).create("orders", 1)
    ks = mq_config.keys
    dead = schedule(r, ks, "orders", 0, "x", due_ms=NOW - 1000, item_topic="")
    for i in range(12):
        schedule(r, ks, "orders", 0, f"m{i}", due_ms=NOW - 100 + i)
    mover = RetryMover(mq_config, batch=5)
    stats = mover.move_due_stats("orders", now_ms=NOW)
    assert stats.moved + stats.dropped == 5
    assert not r.exists(dead)
    while mover.move_due("orders", now_ms=NOW):
        pass
    assert [e["payload"] for e in _entries(r, 0)] == [f"m{i}" for i in range(12)]
    assert r.zcard(ks.retry_zset("orders")) == 0


def test_out_of_range_partition_folds_into_the_topic(
    mover: RetryMover, r: redis.Redis, mq_config: MQConfig
) -> None:
    schedule(r, mq_config.keys, "orders", 3, "p", due_ms=NOW - 1)  # topic has 2 partitions
    assert mover.move_due("orders", now_ms=NOW) == 1
    assert [e["payload"] for e in _entries(r, 1)] == ["p"]
    assert not r.exists("stream:topic:orders:p:3")


def test_move_all_and_run(mover: RetryMover, r: redis.Redis, mq_config: MQConfig) -> None:
    Topics(mq_config).create("other", 1)
    now = int(time.time() * 1000)
    schedule(r, mq_config.keys, "orders", 0, "a", due_ms=now - 10)
    schedule(r, mq_config.keys, "other", 0, "b", due_ms=now - 10)
    assert mover.move_all() == 2
    schedule(r, mq_config.keys, "orders", 1, "c", due_ms=now - 10)
    stop = threading.Event()
    thread = threading.Thread(target=mover.run, args=(stop, 0.01))
    thread.start()
    deadline = time.monotonic() + 10
    while r.xlen("stream:topic:orders:p:1") == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    stop.set()
    thread.join(5)
    assert not thread.is_alive()
    assert [e["payload"] for e in _entries(r, 1)] == ["c"]
