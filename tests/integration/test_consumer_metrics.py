"""Consumer metrics against a real Redis: the counts match what the consumer did, and they
ride the round trips the consumer makes anyway (acks, reads), never one of their own."""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import Any

import pytest
import redis

from mqcore.config import MQConfig
from mqcore.consumer import Consumer, ConsumerOptions, Outcome
from mqcore.consumer_metrics import BUCKETS_MS, ConsumerWindow, read_window, window_plan
from mqcore.models import Message
from mqcore.producer import OutgoingMessage, Producer
from mqcore.retry import RetryPolicy
from mqcore.topics import Topics
from tests.harness.celery_procs import wait_for

pytestmark = pytest.mark.redis

TOPIC, GROUP = "metered", "billing"
OPTIONS = ConsumerOptions(
    group=GROUP,
    name="worker-<b>1</b>",
    lease_ttl_ms=2000,
    renew_interval_ms=300,
    rebalance_interval_ms=200,
    block_ms=100,
    batch_size=20,
    ack_batch=20,
    retry_policy=RetryPolicy(max_retries=2, base_ms=10, max_ms=40, jitter=0.0),
    retry_move_interval_ms=100,
)


class CountingConnection(redis.Connection):
    """A real connection that records what each round trip sent (one ``send_packed_command``
    per command or per pipeline), by thread."""

    trips: list[tuple[str, bytes]] = []
    lock = threading.Lock()

    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        data = command if isinstance(command, bytes) else b"".join(command)
        with self.lock:
            self.trips.append((threading.current_thread().name, data))
        super().send_packed_command(command, check_health)


def _send(cfg: MQConfig, payloads: list[str]) -> None:
    with Producer(cfg) as producer:
        producer.send_many(TOPIC, [OutgoingMessage(payload=p) for p in payloads])


def _window(r: redis.Redis, cfg: MQConfig, window: str) -> dict[str, ConsumerWindow]:
    step, slots, _ = window_plan(window, time.time())
    return read_window(r, cfg.keys, TOPIC, GROUP, slots, step)


def test_counts_match_what_the_consumer_did(r: redis.Redis, mq_config: MQConfig) -> None:
    Topics(mq_config).create(TOPIC, 1)
    calls = {"ok": 0, "raised": 0, "failed": 0}

    def handler(message: Message) -> Outcome | None:
        kind = message.payload.split("-")[0]
        calls[kind] += 1
        if kind == "raised":
            raise RuntimeError("boom")
        if kind == "failed":
            time.sleep(0.03)
            return Outcome.FAIL
        return None

    payloads = [f"ok-{i}" for i in range(30)] + ["raised-1", "raised-2"] + ["failed-1"]
    _send(mq_config, payloads)
    consumer = Consumer(mq_config, TOPIC, handler, OPTIONS)
    consumer.start()
    try:
        # raised: handled 4 times (the producer's maxRetries=3), then dead-lettered
        wait_for(lambda: consumer.stats.dead == 3 and consumer.stats.acked >= 30)
    finally:
        consumer.stop(10)
    found = _window(r, mq_config, "1h")
    assert list(found) == [OPTIONS.name]
    w = found[str(OPTIONS.name)]
    processed = sum(calls.values())
    assert calls == {"ok": 30, "raised": 8, "failed": 1}
    assert w.counts == {
        "processed": processed,
        "failed": 9,
        "retried": consumer.stats.retried,
        "dead": consumer.stats.dead,
    }
    assert consumer.stats.retried == 6
    assert consumer.stats.dead == 3
    assert sum(w.buckets) == processed
    assert w.buckets[BUCKETS_MS.index(50)] >= 1  # the 30 ms FAIL
    assert w.total_us >= 30_000
    # the hour hash holds the same sums (the 24 h and 7 d windows read it)
    assert _window(r, mq_config, "24h")[str(OPTIONS.name)].counts == w.counts
    p50, p99 = w.percentile(0.5), w.percentile(0.99)
    assert p50 is not None
    assert p99 is not None
    assert p50 <= p99 <= BUCKETS_MS[-1]
    # bounded: every metrics key expires
    for key in r.scan_iter(match=f"*consumer-metrics:{TOPIC}:*"):
        assert 0 < r.ttl(key) <= 8 * 86400


def test_metrics_ride_the_ack_round_trips(redis_url: str) -> None:
    cfg = dataclasses.replace(
        MQConfig.from_url(redis_url), client_options={"connection_class": CountingConnection}
    )
    plain = redis.Redis.from_url(redis_url)
    Topics(cfg).create(TOPIC + "-rt", 1)
    plain.config_resetstat()
    CountingConnection.trips.clear()
    consumer = Consumer(cfg, TOPIC + "-rt", lambda _m: None, OPTIONS)
    consumer.start()
    try:
        with Producer(cfg) as producer:
            for wave in range(3):  # waves more than a flush interval apart
                batch = [OutgoingMessage(payload=f"m-{wave}-{i}") for i in range(50)]
                producer.send_many(TOPIC + "-rt", batch)
                time.sleep(1.2)
        wait_for(lambda: consumer.stats.acked == 150)
        time.sleep(1.2)  # one more read round trip carries what is due
        with CountingConnection.lock:
            running = list(CountingConnection.trips)
    finally:
        consumer.stop(10)
    worker = [data for thread, data in running if thread.startswith("mq-")]
    metered = [data for data in worker if b"HINCRBY" in data]
    assert metered, "the worker sent its metrics while running"
    # every round trip that carried metrics carried an ack or a read as well: none of its own
    for data in metered:
        assert b"EVALSHA" in data or b"XREADGROUP" in data
    stats = plain.info("commandstats")
    assert stats["cmdstat_hincrby"]["calls"] > 0
    step, slots, _ = window_plan("1h", time.time())
    found = read_window(plain, cfg.keys, TOPIC + "-rt", GROUP, slots, step)
    assert found[str(OPTIONS.name)].counts["processed"] == 150
    plain.close()


@pytest.mark.cluster
def test_counts_on_redis_cluster(cluster_config: MQConfig) -> None:
    """On Redis Cluster (hash-tagged keys, pipelines without scripts) the metrics ride the
    read pipeline, in the topic's slot, and read back whole."""
    topic = "metered-c"
    assert cluster_config.keys.consumer_metrics(topic, GROUP, "m", 1).count("{metered-c}") == 1
    Topics(cluster_config).create(topic, 2)
    with Producer(cluster_config) as producer:
        producer.send_many(topic, [OutgoingMessage(payload=f"m{i}") for i in range(40)])
    handled: list[int] = []

    def handler(message: Message) -> Outcome:
        handled.append(1)
        return Outcome.FAIL if message.payload == "m7" else Outcome.SUCCESS

    consumer = Consumer(cluster_config, topic, handler, OPTIONS)
    consumer.start()
    try:
        wait_for(lambda: consumer.stats.acked == 39 and consumer.stats.dead == 1)
    finally:
        consumer.stop(10)
    client = cluster_config.client()
    step, slots, _ = window_plan("1h", time.time())
    found = read_window(client, cluster_config.keys, topic, GROUP, slots, step)
    counts = found[str(OPTIONS.name)].counts
    assert counts == {"processed": len(handled), "failed": 1, "retried": 0, "dead": 1}
    client.close()


def test_a_big_hash_is_read_by_pages(r: redis.Redis, mq_config: MQConfig) -> None:
    """A group of hundreds of consumers: its hash is read by HSCAN pages, never at once."""
    from mqcore.consumer_metrics import Tally

    minute = int(time.time()) // 60
    pipe = r.pipeline(transaction=False)
    for i in range(700):
        tally = Tally()
        tally.handled(3.0, failed=i % 2 == 0)
        tally.minute = minute
        tally.queue(pipe, mq_config.keys, TOPIC + "-big", GROUP, f"c{i}")
    pipe.execute()
    key = mq_config.keys.consumer_metrics(TOPIC + "-big", GROUP, "m", minute)
    assert r.hlen(key) > 2000
    r.config_resetstat()
    step, slots, _ = window_plan("1h", time.time())
    found = read_window(r, mq_config.keys, TOPIC + "-big", GROUP, slots, step)
    assert len(found) == 700
    assert sum(w.counts["failed"] for w in found.values()) == 350
    stats = r.info("commandstats")
    assert "cmdstat_hgetall" in stats  # the small (empty) hashes of the window
    assert stats["cmdstat_hscan"]["calls"] >= 2
