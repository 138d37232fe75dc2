import json
import time
from datetime import datetime

import pytest
import redis

from mqcore.config import MQConfig
from mqcore.errors import (
    InvalidArgumentError,
    MQError,
    PayloadTooLargeError,
    UnknownPartitionError,
    UnknownTopicError,
)
from mqcore.metrics import Metrics
from mqcore.partition import partition_for_key
from mqcore.payloads import load_payload
from mqcore.producer import OutgoingMessage, Producer
from mqcore.retry import RetryMover
from mqcore.topics import Topics
from tests.integration.retry_items import schedule

pytestmark = pytest.mark.redis


@pytest.fixture
def producer(mq_config: MQConfig) -> Producer:
    Topics(mq_config).create("orders", 3)
    p = Producer(mq_config, metrics=Metrics())
    yield p
    p.close()


def _entry(r: redis.Redis, partition: int, entry_id: str) -> dict[str, str]:
    [(_, fields)] = r.xrange(f"stream:topic:orders:p:{partition}", entry_id, entry_id)
    return {k.decode(): v.decode() for k, v in fields.items()}


def test_send_writes_the_java_entry_fields(producer: Producer, r: redis.Redis) -> None:
    res = producer.send("orders", "hello", key="k1", headers={"trace": "t-1"})
    assert (res.topic, res.partition) == ("orders", partition_for_key("k1", 3))
    fields = _entry(r, res.partition, res.id)
    assert fields.keys() == {
        "payload", "timestamp", "retryCount", "maxRetries", "topic", "partitionId", "key",
        "headers",
    }  # fmt: skip
    assert fields["payload"] == "hello"
    assert fields["retryCount"] == "0"
    assert fields["maxRetries"] == "3"
    assert fields["topic"] == "orders"
    assert fields["partitionId"] == str(res.partition)
    assert fields["key"] == "k1"
    assert json.loads(fields["headers"]) == {"trace": "t-1", "partitionId": str(res.partition)}
    assert fields["timestamp"].endswith("Z")
    datetime.fromisoformat(fields["timestamp"])
    assert producer.metrics is not None
    assert producer.metrics.get("produced", "orders", res.partition) == 1


def test_keys_follow_the_java_partitioner(producer: Producer) -> None:
    got = [producer.send("orders", "x", key=k).partition for k in ["k", "k0", "k1", "k2", "k3"]]
    assert got == [2, 2, 0, 1, 2]


def test_no_key_round_robins_and_explicit_partition(producer: Producer, r: redis.Redis) -> None:
    parts = [producer.send("orders", "x").partition for _ in range(6)]
    assert sorted(parts) == [0, 0, 1, 1, 2, 2]
    res = producer.send("orders", "x", key="k1", partition=2, max_retries=7)
    assert res.partition == 2
    assert _entry(r, 2, res.id)["maxRetries"] == "7"
    with pytest.raises(UnknownPartitionError, match=r"0\.\.2"):
        producer.send("orders", "x", partition=3)


def test_bytes_payload_and_no_key(producer: Producer, r: redis.Redis) -> None:
    res = producer.send("orders", b"\xff\x00bin", partition=0)
    [(_, fields)] = r.xrange("stream:topic:orders:p:0", res.id, res.id)
    assert fields[b"payload"] == b"\xff\x00bin"
    assert b"key" not in fields


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"topic": "nope", "payload": "x"}, UnknownTopicError),
        ({"topic": "bad:name", "payload": "x"}, InvalidArgumentError),
        ({"topic": "orders", "payload": 42}, InvalidArgumentError),
        ({"topic": "orders", "payload": "x", "headers": {"n": 1}}, InvalidArgumentError),
        ({"topic": "orders", "payload": "x", "headers": {1: "v"}}, InvalidArgumentError),
        ({"topic": "orders", "payload": "x", "key": 5}, InvalidArgumentError),
        ({"topic": "orders", "payload": "\ud800"}, InvalidArgumentError),
        ({"topic": "orders", "payload": "x", "partition": -1}, UnknownPartitionError),
        ({"topic": "orders", "payload": "x", "partition": "1"}, InvalidArgumentError),
        ({"topic": "orders", "payload": "x", "max_retries": -1}, InvalidArgumentError),
    ],
)
def test_bad_input_writes_nothing(
    producer: Producer, r: redis.Redis, kwargs: dict[str, object], error: type[Exception]
) -> None:
    before = r.dbsize(), [r.xlen(f"stream:topic:orders:p:{i}") for i in range(3)]
    with pytest.raises(error):
        producer.send(**kwargs)  # type: ignore[arg-type]
    assert (r.dbsize(), [r.xlen(f"stream:topic:orders:p:{i}") for i in range(3)]) == before


def test_payload_limit_message_names_both_sizes(mq_config: MQConfig) -> None:
    Topics(mq_config).create("t")
    with Producer(mq_config.with_(max_payload_bytes=100)) as producer:
        with pytest.raises(PayloadTooLargeError, match=r"101 bytes.*100 bytes"):
            producer.send("t", "é" * 50 + "x")  # 101 UTF-8 bytes
        producer.send("t", "x" * 100)


def test_large_payload_goes_out_of_line_like_java(mq_config: MQConfig, r: redis.Redis) -> None:
    Topics(mq_config).create("orders", 1)
    big = "ü" * 40_000  # 80,000 bytes > 64 KB
    with Producer(mq_config) as producer:
        res = producer.send("orders", big, headers={"h": "v"})
        raw = b"\xff" * 70_000
        res_raw = producer.send("orders", raw)
    fields = _entry(r, 0, res.id)
    assert "payload" not in fields
    headers = json.loads(fields["headers"])
    assert headers["x-payload-storage-type"] == "hash"
    assert headers["x-payload-original-size"] == "80000"
    ref = headers["x-payload-hash-ref"]
    assert ref.startswith("streaming:mq:payload:orders:p:0:")
    assert json.loads(r.get(ref)) == big  # JSON text, as Java's PayloadLifecycleManager stores it
    assert r.sismember(mq_config.keys.payload_index("orders"), ref)
    prefix = mq_config.keys.payload_prefix("orders", 0)
    assert load_payload(r, headers, prefix=prefix) == big
    raw_headers = json.loads(_entry(r, 0, res_raw.id)["headers"])
    assert load_payload(r, raw_headers, prefix=prefix) == raw


def test_deleted_topic_is_not_resurrected_from_the_cache(
    producer: Producer, mq_config: MQConfig, r: redis.Redis
) -> None:
    producer.send("orders", "warm the cache")
    Topics(mq_config).delete("orders")
    with pytest.raises(UnknownTopicError):
        producer.send("orders", "late")
    assert r.dbsize() == 0


def test_java_topic_without_streams_yet(mq_config: MQConfig, r: redis.Redis) -> None:
    r.sadd("streaming:mq:topics:registry", "lazy")
    r.hset("streaming:mq:topic:lazy:meta", "partitionCount", "2")
    with Producer(mq_config) as producer:
        res = producer.send("lazy", "first", key="a")
    assert r.xlen(f"stream:topic:lazy:p:{res.partition}") == 1


def test_growth_is_seen_after_the_cache_expires(mq_config: MQConfig) -> None:
    Topics(mq_config).create("t", 1)
    with Producer(mq_config, cache_ttl_s=0.0) as producer:
        producer.send("t", "x")
        Topics(mq_config).grow("t", 4)
        assert producer.send("t", "x", partition=3).partition == 3


def test_producer_and_retry_mover_never_trim_a_groups_unread_entries(
    mq_config: MQConfig, r: redis.Redis
) -> None:
    # The producer and the retry mover trimmed MAXLEN ~ MQConfig.maxlen (100,000 by
    # default) on every write: with maxlen 1,000 a group at 0 was left with 1,051 entries,
    # 3,949 lost unseen. Neither trims now; length bounds are the housekeeper's (floor-bound).
    Topics(mq_config).create("t", 1)  # default-group at 0, never reads
    key = "stream:topic:t:p:0"
    pipe = r.pipeline(transaction=False)
    for i in range(100_200):
        pipe.xadd(key, {"payload": "x"}, id=f"1-{i + 1}")
    pipe.execute()
    with Producer(mq_config.with_(inline_payload_bytes=10)) as producer:
        producer.send_many("t", [OutgoingMessage(f"m{i}") for i in range(200)])
        for i in range(100):
            producer.send("t", f"s{i}")
        producer.send("t", "x" * 100)  # out of line: add_entry_with_payload.lua
    now = int(time.time() * 1000)
    for i in range(50):
        schedule(r, mq_config.keys, "t", 0, f"r{i}", due_ms=now - 10)
    assert RetryMover(mq_config, r).move_all() == 50
    assert r.xlen(key) == 100_200 + 200 + 100 + 1 + 50
    assert r.xrange(key, count=1)[0][0] == b"1-1"


def test_send_many_in_order_across_batches(producer: Producer, r: redis.Redis) -> None:
    messages = [OutgoingMessage(f"m{i}", key=f"k{i % 7}") for i in range(250)]
    messages.append(OutgoingMessage("x" * 70_000, partition=1))
    results = producer.send_many("orders", messages, batch_size=100)
    assert len(results) == 251
    assert [r_.partition for r_ in results[:250]] == [
        partition_for_key(f"k{i % 7}", 3) for i in range(250)
    ]
    for p in range(3):
        ids = [res.id for res in results if res.partition == p]
        stored = [e[0].decode() for e in r.xrange(f"stream:topic:orders:p:{p}")]
        assert stored == ids
    assert producer.metrics is not None
    assert producer.metrics.get("produced", "orders") == 251


def test_send_many_validates_everything_first(producer: Producer, r: redis.Redis) -> None:
    messages = [OutgoingMessage(f"m{i}") for i in range(50)]
    messages.append(OutgoingMessage("bad", headers={"n": 1}))  # type: ignore[dict-item]
    with pytest.raises(InvalidArgumentError):
        producer.send_many("orders", messages, batch_size=10)
    assert sum(r.xlen(f"stream:topic:orders:p:{i}") for i in range(3)) == 0


def test_send_many_out_of_line_in_the_middle_of_a_batch(producer: Producer, r: redis.Redis) -> None:
    big = b"\xff" * 70_000
    messages = [OutgoingMessage(f"m{i}", key="a") for i in range(5)]
    messages[2] = OutgoingMessage(big, key="a")
    results = producer.send_many("orders", messages)
    part = partition_for_key("a", 3)
    assert {res.partition for res in results} == {part}
    prefix = "streaming:mq:payload:orders:p:"
    for i, res in enumerate(results):
        fields = _entry(r, part, res.id)
        if i == 2:
            headers = json.loads(fields["headers"])
            assert load_payload(r, headers, prefix=f"{prefix}{part}:") == big
        else:
            assert fields["payload"] == f"m{i}"


def test_send_many_to_a_java_topic_without_streams_yet(mq_config: MQConfig, r: redis.Redis) -> None:
    r.sadd("streaming:mq:topics:registry", "lazy")
    r.hset("streaming:mq:topic:lazy:meta", "partitionCount", "2")
    with Producer(mq_config) as producer:
        results = producer.send_many("lazy", [OutgoingMessage(f"m{i}") for i in range(6)])
    for res in results:
        [(_, fields)] = r.xrange(f"stream:topic:lazy:p:{res.partition}", res.id, res.id)
        assert fields[b"partitionId"] == str(res.partition).encode()
    assert r.xlen("stream:topic:lazy:p:0") + r.xlen("stream:topic:lazy:p:1") == 6


def test_send_many_to_a_deleted_topic_is_refused(
    producer: Producer, mq_config: MQConfig, r: redis.Redis
) -> None:
    producer.send("orders", "warm the cache")
    Topics(mq_config).delete("orders")
    with pytest.raises(UnknownTopicError):
        producer.send_many("orders", [OutgoingMessage(f"m{i}") for i in range(10)])
    assert r.dbsize() == 0


def test_send_many_reports_a_redis_error_as_mq_error(producer: Producer, r: redis.Redis) -> None:
    r.delete("stream:topic:orders:p:1")
    r.set("stream:topic:orders:p:1", "not a stream")
    messages = [OutgoingMessage(f"m{i}", partition=i % 3) for i in range(9)]
    with pytest.raises(MQError, match=r"send to 'orders'.*WRONGTYPE"):
        producer.send_many("orders", messages)
    assert r.xlen("stream:topic:orders:p:0") == 3  # the other commands of the round trip stand
