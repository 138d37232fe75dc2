"""R20: a Sentinel failover mid-traffic loses nothing a WAIT-ing producer was told is written.

Real processes: a redis-server master and replica, three ``redis-server --sentinel``, and a
Celery worker with beat (the collector) whose MQ cluster, console store and broker are all
``redis+sentinel://`` URLs. In this process: two producers that wait for one replica
(``Producer(wait_replicas=1)``) and a consumer group, all through the Sentinel URL. Then
``SENTINEL FAILOVER`` while they run.

The bound: producers, the consumer and the collector each make progress again within
RECOVERY_S (10 s) of the failover; the test's own time is about 20 s. The console then
shows the failover: the master change on the collectors page and its API (with the count
of acked entries pending again), on the incident timeline, and as the ``master_change``
alert (test_r20_failover_visible.py makes the lost acks and positions happen for sure).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from django.core.cache.backends.redis import RedisCache
from django.test import Client, override_settings

from dashboard.clusters import console_store, reset_caches
from mqcore.cli import main
from mqcore.config import MQConfig
from mqcore.consumer import Consumer, ConsumerOptions
from mqcore.errors import InvalidArgumentError, MQError, NotReplicatedError
from mqcore.models import Message
from mqcore.producer import OutgoingMessage, Producer
from mqcore.retry import RetryPolicy
from mqcore.topics import Topics
from mqcore.wire import Wire
from mqcore.wire_link import give_back, take_link
from scripts.embedded import EmbeddedRedis
from tests.harness.celery_procs import collector_env, start, stop, wait_for
from tests.harness.sentinel import LocalSentinel
from tests.integration.dlq_support import role_user

pytestmark = [pytest.mark.redis, pytest.mark.faults]

TOPIC = "orders"
RECOVERY_S = 10.0
OPTIONS = ConsumerOptions(
    group="billing",
    lease_ttl_ms=3000,
    renew_interval_ms=300,
    rebalance_interval_ms=200,
    block_ms=100,
    batch_size=50,
    ack_batch=20,
    reclaim_interval_ms=500,
    claim_idle_ms=1000,
    retry_policy=RetryPolicy(max_retries=2, base_ms=10, max_ms=40, jitter=0.0),
)


@pytest.fixture
def sentinel(tmp_path: Path) -> Iterator[LocalSentinel]:
    deployment = LocalSentinel(tmp_path / "redis")
    try:
        yield deployment.start()
    finally:
        deployment.stop()


class Producing(threading.Thread):
    """Sends until stopped; ``acked`` holds what a send returned for (WAIT 1 passed)."""

    def __init__(self, config: MQConfig, name: str) -> None:
        super().__init__(daemon=True)
        self.producer = Producer(config, wait_replicas=1, wait_timeout_ms=500)
        self.name = name
        self.acked: list[tuple[float, str]] = []  # (monotonic time, payload)
        self.failures = 0
        self.stopping = threading.Event()

    def run(self) -> None:
        n = 0
        while not self.stopping.is_set():
            payload = f"{self.name}-{n}"
            n += 1
            try:
                self.producer.send(TOPIC, payload, key=payload)
            except MQError:  # not acknowledged: may or may not be there
                self.failures += 1
                self.stopping.wait(0.05)
                continue
            self.acked.append((time.monotonic(), payload))
            self.stopping.wait(0.005)
        self.producer.close()

    def acked_after(self, moment: float) -> bool:
        return any(t > moment for t, _ in self.acked)


@pytest.mark.django_db
def test_failover_mid_traffic_loses_no_acknowledged_write(
    sentinel: LocalSentinel, tmp_path: Path
) -> None:
    mq_url, console_url = sentinel.url(0), sentinel.url(1)
    config = MQConfig.from_url(mq_url)
    Topics(config).create(TOPIC, 3)
    env = collector_env("", {"main": mq_url}, COLLECT_INTERVAL_S=1)
    env.update(CONSOLE_REDIS_URL=console_url, CELERY_BROKER_URL=sentinel.url(2))
    collector = start("worker-beat", env, tmp_path)
    seen: dict[str, float] = {}  # payload -> when the consumer first handled it

    def handle(message: Message) -> None:
        seen.setdefault(str(message.payload), time.monotonic())

    consumer = Consumer(config, TOPIC, handle, OPTIONS)
    producers = [Producing(config, f"p{i}") for i in range(2)]
    client = config.client()
    with override_settings(CONSOLE_REDIS_URL=console_url, MQ_CLUSTERS={"main": {"url": mq_url}}):
        reset_caches()
        health = console_store().collector_health_get

        def runs() -> int:
            return int((health().get("main") or {}).get("runs", 0))

        try:
            consumer.start()
            for producer in producers:
                producer.start()
            wait_for(lambda: runs() >= 2, timeout=20, what="collector passes before the failover")
            wait_for(lambda: len(seen) >= 20, what="the consumer handling messages")
            old_master, runs_before = sentinel.master_port(), runs()
            failed_over = time.monotonic()
            new_master = sentinel.failover()
            assert new_master != old_master
            # producers, the consumer and the collector go on within the bound
            for producer in producers:
                wait_for(
                    lambda p=producer: p.acked_after(failed_over),  # type: ignore[misc]
                    timeout=RECOVERY_S,
                    what=f"{producer.name} acknowledged again",
                )
            wait_for(
                lambda: any(t > failed_over for t in list(seen.values())),
                timeout=RECOVERY_S,
                what="the consumer handling messages again",
            )
            wait_for(
                lambda: runs() >= runs_before + 2,
                timeout=RECOVERY_S,
                what="two collector passes after the failover",
            )
            assert health()["main"]["ok"] is True
            _the_failover_is_shown(health)
            # the rate limits' counters (a Django cache in the console store) too
            options = {"pool_class": "mqcore.sentinel.UrlConnectionPool"}
            counters = RedisCache([console_url], {"OPTIONS": options})
            assert counters.add("r20", 1)
            assert counters.incr("r20") == 2
            _stop(producers)
            acked = {payload for producer in producers for _, payload in producer.acked}
            # nothing acknowledged is lost: every acked payload is in the new master's streams
            stored = {
                fields[b"payload"].decode()
                for partition in range(3)
                for _, fields in client.xrange(config.keys.partition(TOPIC, partition))
            }
            assert acked <= stored, f"lost in the failover: {sorted(acked - stored)[:10]}"
            # and the consumer group gets every one of them (at least once)
            wait_for(lambda: acked <= set(seen), timeout=RECOVERY_S, what="every acked handled")
            assert int(client.connection_pool.get_master_address()[1]) == new_master
            # the batched path's own sockets (the collector's reads) go to the new master
            assert Wire(client, 1).linked
            link = take_link(client)
            assert link.address[1] == new_master
            give_back(client, link)
        finally:
            _stop(producers)
            consumer.stop(10)
            stop(collector)
            client.close()
            reset_caches()


def _the_failover_is_shown(health: Callable[[], dict[str, Any]]) -> None:
    """The master change on the collectors page and its API, on the timeline and as an
    alert, with its redelivery count (how many acks the new master lacked is the race's)."""
    wait_for(
        lambda: bool(health()["main"].get("master_change")),
        timeout=RECOVERY_S,
        what="the master change recorded",
    )
    change = health()["main"]["master_change"]
    assert change["reason"] == "promoted"
    client = Client()
    client.force_login(role_user("sre", "Viewer"))
    (row,) = client.get("/api/v1/collectors").json()["collectors"]
    assert row["master_change"]["redelivered"] == change["redelivered"] >= 0
    assert row["replication"]["role"] == "master"
    page = client.get("/collectors/").content.decode()
    assert "Redelivered after failover" in page
    assert f"{change['redelivered']} acked entries pending again" in page
    timeline = client.get("/api/v1/clusters/main/timeline?kind=redis").json()["events"]
    assert any("master changed (promoted)" in e["text"] for e in timeline), timeline
    assert "master changed (promoted)" in client.get("/clusters/main/timeline/").content.decode()
    alerts = client.get("/api/v1/alerts").json()
    assert "master_change:redis" in str(alerts)
    assert "the MQ Redis master changed (promoted)" in client.get("/alerts/").content.decode()


def _stop(producers: list[Producing]) -> None:
    for producer in producers:
        producer.stopping.set()
    for producer in producers:
        producer.join(10)


def test_a_write_no_replica_had_is_not_acknowledged(
    mq_config: MQConfig, capsys: pytest.CaptureFixture[str]
) -> None:
    """The private server has no replica: WAIT 1 counts none, so no send is acknowledged,
    and the error names the entries written (a failover could lose them)."""
    Topics(mq_config).create(TOPIC, 2)
    with Producer(mq_config, wait_replicas=1, wait_timeout_ms=20) as producer:
        with pytest.raises(NotReplicatedError, match="0 of 1 replicas") as one:
            producer.send(TOPIC, "x", key="k")
        with pytest.raises(NotReplicatedError) as many:
            producer.send_many(TOPIC, [OutgoingMessage("y"), OutgoingMessage("z" * 70_000)])
    assert len(one.value.entry_ids) == 1
    assert len(many.value.entry_ids) == 2  # the out-of-line payload went in the round trip
    with Producer(mq_config, wait_replicas=0) as producer:
        assert producer.send(TOPIC, "w").id
    cli = ["--redis-url", mq_config.url, "produce", TOPIC, "--payload", "v", "--wait-replicas"]
    assert main([*cli, "1"]) == 1  # Redis took it, no replica had it: not acknowledged
    assert "0 of 1 replicas" in capsys.readouterr().err
    assert main([*cli, "0"]) == 0
    bad_options = [
        {"wait_replicas": -1},
        {"wait_replicas": 1, "wait_timeout_ms": 0},
        {"wait_replicas": 1, "wait_timeout_ms": 5000},  # not below the socket timeout
    ]
    for bad in bad_options:
        with pytest.raises(InvalidArgumentError):
            Producer(mq_config, **bad)  # type: ignore[arg-type]


def test_a_link_that_met_a_demoted_master_is_not_used_again(
    redis_server: EmbeddedRedis, tmp_path: Path
) -> None:
    replica = EmbeddedRedis(
        tmp_path / "replica", extra_args=["--replicaof", redis_server.host, str(redis_server.port)]
    )
    with replica:
        client = redis.Redis(host=replica.host, port=replica.port, socket_timeout=5)
        (reply,) = Wire(client, 1).run([("SET", "k", "v")])
        assert isinstance(reply, redis.exceptions.ReadOnlyError)
        link = take_link(client)
        assert not link.demoted  # the READONLY link was dropped, this one is new
        link.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n")
        assert isinstance(link.read(1)[0], redis.exceptions.ReadOnlyError)
        assert link.demoted
        assert not link.idle_ok()
        link.close()
        client.close()
