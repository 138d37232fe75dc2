"""The Consumer against a real Redis: outcomes, retries (Java semantics), DLQ, leases, fencing."""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
import redis

from mqcore.config import MQConfig
from mqcore.consumer import Consumer, ConsumerOptions, Outcome, decode_message
from mqcore.errors import InvalidArgumentError
from mqcore.models import Message
from mqcore.producer import OutgoingMessage, Producer
from mqcore.retry import RetryPolicy
from mqcore.scripts import lua_source
from mqcore.topics import Topics

pytestmark = pytest.mark.redis

TOPIC, GROUP = "orders", "default-group"
FAST = ConsumerOptions(
    lease_ttl_ms=2000, renew_interval_ms=300, rebalance_interval_ms=200, block_ms=100,
    batch_size=20, ack_batch=20, reclaim_interval_ms=500, claim_idle_ms=1000,
    retry_policy=RetryPolicy(max_retries=2, base_ms=10, max_ms=40, jitter=0.0),
    retry_move_interval_ms=100,
)  # fmt: skip


def wait_for(predicate: Callable[[], bool], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError("condition not reached in time")


@contextmanager
def running(consumer: Consumer) -> Iterator[Consumer]:
    consumer.start()
    try:
        yield consumer
    finally:
        consumer.stop(10)


def _send(cfg: MQConfig, payloads: list[str], **kw: object) -> list[str]:
    with Producer(cfg, **kw) as p:  # type: ignore[arg-type]
        res = p.send_many(TOPIC, [OutgoingMessage(payload=x, key=x) for x in payloads])
    return [x.id for x in res]


def test_consumes_everything_acks_and_releases_on_stop(r: redis.Redis, mq_config: MQConfig) -> None:
    Topics(mq_config).create(TOPIC, 3)
    _send(mq_config, [f"m{i}" for i in range(60)])
    seen: list[Message] = []
    lock = threading.Lock()

    def handler(m: Message) -> None:
        with lock:
            seen.append(m)

    consumer = Consumer(mq_config, TOPIC, handler, FAST)
    keys = mq_config.keys
    with running(consumer):
        wait_for(lambda: consumer.stats.acked == 60)
        assert consumer.owned_partitions() == [0, 1, 2]
        beat = json.loads(r.hget(keys.consumers(TOPIC, GROUP), consumer.name))
        assert set(beat) >= {"last_seen_ms", "partitions", "max_partitions", "host", "pid"}
        assert r.get(keys.lease(TOPIC, GROUP, 0)) == consumer.name.encode()
    assert sorted(m.payload for m in seen) == sorted(f"m{i}" for i in range(60))
    assert all(m.key == m.payload and m.topic == TOPIC for m in seen)
    for p in range(3):
        assert r.xpending(keys.partition(TOPIC, p), GROUP)["pending"] == 0
        assert r.get(keys.lease(TOPIC, GROUP, p)) is None
    assert r.hget(keys.consumers(TOPIC, GROUP), consumer.name) is None
    assert consumer.stats.processed == 60


def test_retry_then_dead_letter_with_java_semantics(r: redis.Redis, mq_config: MQConfig) -> None:
    Topics(mq_config).create(TOPIC, 1)
    (first_id,) = _send(mq_config, ["bad"], max_retries=2)
    _send(mq_config, ["good"])
    calls: list[Message] = []

    def handler(m: Message) -> Outcome:
        calls.append(m)
        if m.payload == "bad":
            raise RuntimeError("handler broke")
        return Outcome.SUCCESS

    consumer = Consumer(mq_config, TOPIC, handler, FAST)
    with running(consumer):
        wait_for(lambda: consumer.stats.dead == 1)
    bad = [m for m in calls if m.payload == "bad"]
    assert [m.retry_count for m in bad] == [0, 1, 2]  # maxRetries=2 -> handled 3 times
    assert all(m.headers.get("x-original-message-id") == first_id for m in bad[1:])
    assert bad[2].headers["x-runtime-error-type"] == "RuntimeError"
    ((_, raw),) = r.xrange(mq_config.keys.dlq(TOPIC))
    letter = {k.decode(): v.decode() for k, v in raw.items()}
    assert letter["retryCount"] == "2"
    assert letter["maxRetries"] == "2"
    assert letter["partitionId"] == "0"
    assert json.loads(letter["headers"])["x-runtime-error-message"] == "handler broke"
    assert json.loads(letter["headers"])["x-original-message-id"] == first_id
    assert consumer.stats.retried == 2
    assert r.zcard(mq_config.keys.retry_zset(TOPIC)) == 0
    assert r.xpending(mq_config.keys.partition(TOPIC, 0), GROUP)["pending"] == 0


def test_fail_outcome_dead_letters_at_once_and_partition_keeps_flowing(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    Topics(mq_config).create(TOPIC, 2)
    _send(mq_config, ["poison", *[f"ok{i}" for i in range(10)]])
    ok: list[str] = []

    def handler(m: Message) -> Outcome:
        if m.payload == "poison":
            return Outcome.FAIL
        ok.append(m.payload)
        return Outcome.SUCCESS

    consumer = Consumer(mq_config, TOPIC, handler, FAST)
    with running(consumer):
        wait_for(lambda: consumer.stats.dead == 1 and len(ok) == 10)
    assert consumer.stats.retried == 0
    ((_, raw),) = r.xrange(mq_config.keys.dlq(TOPIC))
    headers = json.loads(raw[b"headers"])
    assert headers["x-runtime-error-message"] == "handler returned fail"
    assert raw[b"partitionId"].decode() == headers["partitionId"]


def test_two_consumers_split_partitions_fairly(r: redis.Redis, mq_config: MQConfig) -> None:
    Topics(mq_config).create(TOPIC, 4)
    a = Consumer(mq_config, TOPIC, lambda m: None, FAST)
    b = Consumer(mq_config, TOPIC, lambda m: None, FAST)
    with running(a):
        wait_for(lambda: len(a.owned_partitions()) == 4)
        with running(b):
            wait_for(lambda: len(a.owned_partitions()) == 2 and len(b.owned_partitions()) == 2)
            assert set(a.owned_partitions()).isdisjoint(b.owned_partitions())
            _send(mq_config, [f"x{i}" for i in range(40)])
            wait_for(lambda: a.stats.acked + b.stats.acked == 40)
        wait_for(lambda: len(a.owned_partitions()) == 4)
    assert a.stats.processed + b.stats.processed == 40


def test_max_partitions_caps_ownership(mq_config: MQConfig) -> None:
    Topics(mq_config).create(TOPIC, 3)
    opts = ConsumerOptions(**{**FAST.__dict__, "max_partitions": 1})
    consumer = Consumer(mq_config, TOPIC, lambda m: None, opts)
    with running(consumer):
        wait_for(lambda: len(consumer.owned_partitions()) == 1)
        time.sleep(0.5)
        assert len(consumer.owned_partitions()) == 1


def test_zombie_ack_is_fenced_after_takeover(r: redis.Redis, mq_config: MQConfig) -> None:
    Topics(mq_config).create(TOPIC, 1)
    _send(mq_config, ["slow"])
    entered, release = threading.Event(), threading.Event()

    def handler(m: Message) -> None:
        entered.set()
        release.wait(10)

    consumer = Consumer(mq_config, TOPIC, handler, FAST)
    with running(consumer):
        wait_for(entered.is_set)
        # another consumer takes the partition over behind the frozen handler's back
        r.set(mq_config.keys.lease(TOPIC, GROUP, 0), "thief", px=60000)
        r.incr(mq_config.keys.lease_epoch(TOPIC, GROUP, 0))
        release.set()
        wait_for(lambda: consumer.stats.fenced >= 1)
        assert consumer.stats.acked == 0
    assert r.xpending(mq_config.keys.partition(TOPIC, 0), GROUP)["pending"] == 1
    assert r.get(mq_config.keys.lease(TOPIC, GROUP, 0)) == b"thief"


def test_takeover_reclaims_pending_and_counts_trimmed_ids(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    Topics(mq_config).create(TOPIC, 1)
    ids = _send(mq_config, [f"p{i}" for i in range(5)])
    stream = mq_config.keys.partition(TOPIC, 0)
    r.xreadgroup(GROUP, "crashed-consumer", {stream: ">"}, count=10)
    r.xdel(stream, ids[1], ids[3])
    seen: list[str] = []
    consumer = Consumer(mq_config, TOPIC, lambda m: seen.append(m.payload), FAST)
    with running(consumer):
        wait_for(lambda: consumer.stats.acked == 3)
        wait_for(lambda: consumer.stats.lost_by_retention == 2)
    assert seen == ["p0", "p2", "p4"]
    assert r.xpending(stream, GROUP)["pending"] == 0
    assert consumer.stats.reclaimed == 3


def test_a_full_ack_batch_rides_with_the_next_read_which_does_not_block(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    """batch_size == ack_batch: a batch's acks go in one round trip with the next read, not
    on their own; that read does not BLOCK (on a drained stream the acks' reply would
    wait out block_ms)."""
    Topics(mq_config).create(TOPIC, 1)
    _send(mq_config, [f"m{i}" for i in range(60)])
    ack_sha, release_sha = (
        hashlib.sha1(lua_source(name).encode()).hexdigest()
        for name in ("ack_entries", "release_lease")
    )
    seen: list[dict[str, object]] = []
    with r.monitor() as monitor:

        def listen() -> None:
            with contextlib.suppress(redis.RedisError, OSError):  # the monitor closing
                for command in monitor.listen():
                    seen.append(command)

        threading.Thread(target=listen, daemon=True).start()
        consumer = Consumer(mq_config, TOPIC, lambda m: None, FAST)
        with running(consumer):
            wait_for(lambda: consumer.stats.acked == 60)
        # the lease release is the worker's last call: MONITOR has shown everything before it
        wait_for(lambda: any(release_sha in str(c["command"]) for c in seen))
    calls = [c for c in seen if c.get("client_type") != "lua"]  # not the scripts' own calls
    acks = [i for i, c in enumerate(calls) if str(c["command"]).startswith(f"EVALSHA {ack_sha}")]
    assert len(acks) == 3  # one per batch of 20
    for i in acks:
        sender = calls[i]["client_address"], calls[i]["client_port"]
        after = next(c for c in calls[i + 1 :] if (c["client_address"], c["client_port"]) == sender)
        assert str(after["command"]).startswith("XREADGROUP")
        assert " BLOCK " not in str(after["command"])


def test_acks_riding_a_read_are_sent_again_after_a_script_flush(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    """Redis lost the ack script (restart, flush) between the handler and the read its acks
    ride on: the pipelined EVALSHA answers NOSCRIPT, and the acks go again on their own."""
    Topics(mq_config).create(TOPIC, 1)
    _send(mq_config, ["a", "b", "c"])
    seen: list[str] = []

    def handler(m: Message) -> None:
        seen.append(m.payload)
        r.script_flush()

    consumer = Consumer(mq_config, TOPIC, handler, FAST)
    with running(consumer):
        wait_for(lambda: consumer.stats.acked == 3)
    keys = mq_config.keys
    assert r.xpending(keys.partition(TOPIC, 0), GROUP)["pending"] == 0
    assert sorted(seen) == ["a", "b", "c"]  # each handled once: no worker crashed and re-read
    assert r.get(keys.lease_epoch(TOPIC, GROUP, 0)) == b"1"


def test_decode_message_is_lenient() -> None:
    m = decode_message(
        "t", 1, "1-0",
        {b"payload": b"\xff\xfe", b"headers": b"not json", b"retryCount": b"x", b"key": b""},
    )  # fmt: skip
    assert m.payload_bytes == b"\xff\xfe"
    assert m.headers == {}
    assert m.retry_count == 0
    assert m.max_retries == 3
    assert m.key is None


def test_bad_options_are_refused(mq_config: MQConfig) -> None:
    with pytest.raises(InvalidArgumentError):
        Consumer(mq_config, "bad topic", lambda m: None)
    with pytest.raises(InvalidArgumentError):
        Consumer(
            mq_config,
            TOPIC,
            lambda m: None,
            ConsumerOptions(lease_ttl_ms=1000, renew_interval_ms=900),
        )
