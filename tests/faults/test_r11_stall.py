"""R11: Redis stalls shorter than TTL/3 (CLIENT PAUSE, SIGSTOP of redis-server).

Leases renew, nobody takes over, no duplicate burst, nothing lost. The SIGSTOP
variant freezes a private redis-server started by the test (never the session
server other tests share): the whole process stops, clock and expiry included.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from mqcore.config import MQConfig
from scripts.embedded import EmbeddedRedis
from tests.faults.checker import (
    check,
    pending_total,
    produce,
    setup_topic,
    sink_records,
    wait_for,
    workers,
)

pytestmark = [pytest.mark.faults, pytest.mark.redis]

TOPIC, SINK, GROUP, P, N = "r11", "sink:r11", "default-group", 4, 150


def test_short_stalls_keep_leases(r: redis.Redis, mq_config: MQConfig, redis_url: str) -> None:
    setup_topic(mq_config, TOPIC, P)
    keys = mq_config.keys
    epochs = lambda: [int(r.get(keys.lease_epoch(TOPIC, GROUP, p)) or 0) for p in range(P)]  # noqa: E731
    with workers(redis_url, TOPIC, SINK, 2, "--handle-ms", "5", "--ack-batch", "5") as (a, b):
        names = [a.name.encode(), b.name.encode()]
        wait_for(
            lambda: (
                sorted(r.get(keys.lease(TOPIC, GROUP, p)) or b"" for p in range(P))
                == sorted(names * 2)
            ),
            20,
            "both consumers to hold two partitions",
        )
        before = epochs()
        produced: list[tuple[str, int]] = []
        for i in range(3):
            produced += produce(mq_config, TOPIC, N // 3, start=i * N)
            r.execute_command("CLIENT", "PAUSE", 400, "ALL")  # TTL 1500 ms / 3 = 500 ms
            wait_for(lambda: r.ping(), 5, "the pause to end")
            # separate stalls: consumers work (and renew, every 300 ms) between them
            total = len(produced)
            wait_for(lambda t=total: r.llen(SINK) >= t, 20, "the batch to be handled")
            time.sleep(0.5)
        wait_for(
            lambda: r.llen(SINK) >= N and pending_total(r, mq_config, TOPIC, P) == 0,
            30,
            "all work",
        )
        assert epochs() == before, a.stderr() + b.stderr()  # nobody lost a lease or took over
        for w in (a, b):
            w.signal(signal.SIGTERM)
            assert w.wait(15) == 0
            assert w.stats()["fenced"] == 0
    report = check(produced, sink_records(r, SINK))
    assert report.lost == [], report.summary()
    assert report.duplicates == {}, report.summary()


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[EmbeddedRedis]:
    """A redis-server only this test talks to (it gets SIGSTOPped); free port, tmp_path."""
    server = EmbeddedRedis(tmp_path / "redis").start()
    try:
        yield server
    finally:
        assert server.process is not None
        if server.process.poll() is None:
            os.kill(server.process.pid, signal.SIGCONT)  # never leave it frozen
        server.stop()


def test_sigstop_of_redis_server_keeps_leases(private_redis: EmbeddedRedis) -> None:
    assert private_redis.process is not None
    redis_pid = private_redis.process.pid  # checked against INFO process_id at start
    url = private_redis.url
    config = MQConfig.from_url(url)
    keys = config.keys
    r = redis.Redis.from_url(url, socket_timeout=5)
    setup_topic(config, TOPIC, P)
    owners = lambda: [r.get(keys.lease(TOPIC, GROUP, p)) for p in range(P)]  # noqa: E731
    epochs = lambda: [int(r.get(keys.lease_epoch(TOPIC, GROUP, p)) or 0) for p in range(P)]  # noqa: E731
    # TTL 3000 ms: stalls of 700 ms stay under TTL/3 = 1000 ms. The socket timeout outlives
    # a stall (a call timing out while Redis still runs it later would be a retry, not R11),
    # and entries in hand are never idle long enough to be reclaimed.
    options = (
        "--ttl-ms", "3000", "--renew-ms", "500", "--rebalance-ms", "300",
        "--socket-timeout", "2.0", "--claim-idle-ms", "10000",
        "--handle-ms", "10", "--ack-batch", "5",
    )  # fmt: skip
    try:
        with workers(url, TOPIC, SINK, 2, *options) as (a, b):
            names = [a.name.encode(), b.name.encode()]
            wait_for(
                lambda: sorted(o or b"" for o in owners()) == sorted(names * 2),
                20,
                "both consumers to hold two partitions",
            )
            owners_before, epochs_before = owners(), epochs()
            produced: list[tuple[str, int]] = []
            for i in range(3):
                produced += produce(config, TOPIC, N // 3, start=i * N)
                # freeze Redis while that batch is in flight: every call (renew, read,
                # sink, ack) hangs until SIGCONT
                os.kill(redis_pid, signal.SIGSTOP)
                try:
                    time.sleep(0.7)
                finally:
                    os.kill(redis_pid, signal.SIGCONT)
                # separate stalls: consumers work (and renew, every 500 ms) between them
                total = len(produced)
                wait_for(lambda t=total: r.llen(SINK) >= t, 20, "the batch to be handled")
                time.sleep(0.6)
            wait_for(
                lambda: r.llen(SINK) >= N and pending_total(r, config, TOPIC, P) == 0,
                20,
                "all work",
            )
            stderr = a.stderr() + b.stderr()
            assert owners() == owners_before, stderr  # same owner for every partition
            assert epochs() == epochs_before, stderr  # nobody lost a lease or took over
            for w in (a, b):
                w.signal(signal.SIGTERM)
                assert w.wait(15) == 0
                assert w.stats()["fenced"] == 0
        report = check(produced, sink_records(r, SINK))
        assert report.lost == [], report.summary()
        assert report.duplicates == {}, report.summary()
        assert report.epoch_regressions == [], report.summary()
    finally:
        r.close()
