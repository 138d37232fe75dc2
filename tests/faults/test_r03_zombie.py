"""R3: a frozen owner (SIGSTOP > TTL) is taken over; its late side effect and ack are refused."""

from __future__ import annotations

import signal

import pytest
import redis

from mqcore.config import MQConfig
from tests.faults.checker import (
    Worker,
    check,
    pending_total,
    produce,
    setup_topic,
    sink_records,
    wait_for,
)

pytestmark = [pytest.mark.faults, pytest.mark.redis]

TOPIC, SINK, N, GROUP = "r3", "sink:r3", 30, "default-group"


def test_zombie_is_fenced_after_takeover(
    r: redis.Redis, mq_config: MQConfig, redis_url: str
) -> None:
    setup_topic(mq_config, TOPIC, 1)
    keys = mq_config.keys
    common = ("--handle-ms", "150", "--ack-batch", "1", "--batch", "5")
    zombie = Worker(redis_url, TOPIC, SINK, *common).ready()
    peer = None
    try:
        wait_for(lambda: r.get(keys.lease(TOPIC, GROUP, 0)) == zombie.name.encode(), 10, "lease")
        first_epoch = int(r.get(keys.lease_epoch(TOPIC, GROUP, 0)) or 0)
        produced = produce(mq_config, TOPIC, N)
        wait_for(lambda: r.llen(SINK) >= 3, 10, "the first owner to work")

        def in_handler() -> bool:  # started an entry the sink does not hold yet
            current = (r.get(f"{SINK}:handling") or b"").decode()
            return bool(current) and all(x["id"] != current for x in sink_records(r, SINK))

        wait_for(in_handler, 10, "the first owner inside a handler", step=0.005)
        zombie.signal(signal.SIGSTOP)  # frozen inside a 150 ms handler, holding its epoch
        peer = Worker(redis_url, TOPIC, SINK, *common).ready()
        wait_for(lambda: r.get(keys.lease(TOPIC, GROUP, 0)) == peer.name.encode(), 15, "takeover")
        assert int(r.get(keys.lease_epoch(TOPIC, GROUP, 0)) or 0) > first_epoch
        wait_for(lambda: any(x["consumer"] == peer.name for x in sink_records(r, SINK)), 10, "peer")
        zombie.signal(signal.SIGCONT)
        wait_for(
            lambda: (
                check(produced, sink_records(r, SINK)).lost == []
                and pending_total(r, mq_config, TOPIC, 1) == 0
            ),
            30,
            "the peer to finish",
        )
        zombie.signal(signal.SIGTERM)
        assert zombie.wait(15) == 0
        stats = zombie.stats()
    finally:
        zombie.kill()
        if peer is not None:
            peer.kill()
    records = sink_records(r, SINK)
    report = check(produced, records)
    assert report.lost == [], report.summary()
    assert stats["fenced"] >= 1, stats
    # no side effect carrying the old epoch landed after the takeover
    assert report.epoch_regressions == [], report.summary()
    took_over = next(i for i, x in enumerate(records) if x["consumer"] == peer.name)
    assert all(x["consumer"] == peer.name for x in records[took_over:])
