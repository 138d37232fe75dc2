"""R4: 20 consumer processes race for leases: one holder per partition, epochs only grow."""

from __future__ import annotations

import random
import signal
import threading
from collections import defaultdict

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

TOPIC, SINK, N, P, GROUP = "r4", "sink:r4", 200, 4, "default-group"


def test_twenty_processes_race(r: redis.Redis, mq_config: MQConfig, redis_url: str) -> None:
    setup_topic(mq_config, TOPIC, P)
    keys = mq_config.keys
    observed: dict[int, list[int]] = defaultdict(list)
    done = threading.Event()
    monitor_client = redis.Redis.from_url(redis_url, socket_timeout=5)

    def monitor() -> None:
        while not done.is_set():
            pipe = monitor_client.pipeline(transaction=False)
            for p in range(P):
                pipe.get(keys.lease_epoch(TOPIC, GROUP, p))
            for p, epoch in enumerate(pipe.execute()):
                observed[p].append(int(epoch or 0))
            done.wait(0.01)

    thread = threading.Thread(target=monitor)
    thread.start()
    try:
        with workers(redis_url, TOPIC, SINK, 20, "--handle-ms", "5", "--ack-batch", "5") as procs:
            produced = produce(mq_config, TOPIC, N)
            wait_for(lambda: r.llen(SINK) >= N // 3, 30, "progress")
            # kill -9 two current holders to force takeovers mid-stream
            names = {w.name.encode(): w for w in procs}
            holders = [names.get(r.get(keys.lease(TOPIC, GROUP, p))) for p in range(P)]
            for victim in random.sample([h for h in holders if h], 2):
                victim.signal(signal.SIGKILL)
            wait_for(
                lambda: (
                    check(produced, sink_records(r, SINK)).lost == []
                    and pending_total(r, mq_config, TOPIC, P) == 0
                ),
                60,
                "all work done",
            )
    finally:
        done.set()
        thread.join()
        monitor_client.close()
    report = check(produced, sink_records(r, SINK))
    assert report.lost == [], report.summary()
    assert report.epoch_regressions == [], report.summary()
    for p, epochs in observed.items():
        assert epochs == sorted(epochs), f"epoch of p{p} went backwards"
    # each (partition, epoch) was used by exactly one consumer
    users: dict[tuple[int, int], set[str]] = defaultdict(set)
    for rec in sink_records(r, SINK):
        users[(rec["partition"], rec["epoch"])].add(rec["consumer"])
    assert all(len(u) == 1 for u in users.values()), users
