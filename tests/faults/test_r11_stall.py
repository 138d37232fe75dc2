"""R11: Redis stalls (CLIENT PAUSE < TTL/3): leases renew, no takeover, no duplicate burst."""

from __future__ import annotations

import signal
import time

import pytest
import redis

from mqcore.config import MQConfig
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
