"""R2: SIGTERM mid-batch: zero duplicates, zero loss, leases released."""

from __future__ import annotations

import signal

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

TOPIC, SINK, N, P = "r2", "sink:r2", 120, 4


def test_sigterm_mid_batch_is_clean(r: redis.Redis, mq_config: MQConfig, redis_url: str) -> None:
    setup_topic(mq_config, TOPIC, P)
    keys = mq_config.keys
    with workers(
        redis_url, TOPIC, SINK, 2, "--handle-ms", "10", "--batch", "20", "--ack-batch", "20"
    ) as (a, b):
        owners = lambda: {r.get(keys.lease(TOPIC, "default-group", p)) for p in range(P)}  # noqa: E731
        wait_for(lambda: owners() == {a.name.encode(), b.name.encode()}, 20, "both to hold leases")
        produced = produce(mq_config, TOPIC, N)
        wait_for(lambda: r.llen(SINK) >= N // 4, 20, "work to be under way")
        a.signal(signal.SIGTERM)
        assert a.wait(20) == 0
        stats = a.stats()
        assert stats["processed"] > 0
        # a released its leases on the way out (b may already have taken them)
        assert a.name.encode() not in owners()
        assert r.hget(keys.consumers(TOPIC, "default-group"), a.name) is None
        wait_for(
            lambda: r.llen(SINK) >= N and pending_total(r, mq_config, TOPIC, P) == 0,
            30,
            "b to finish",
        )
        b.signal(signal.SIGTERM)
        assert b.wait(20) == 0
        assert all(o is None for o in owners())
    report = check(produced, sink_records(r, SINK))
    assert report.lost == [], report.summary()
    assert report.duplicates == {}, report.summary()
    assert report.reordered == [], report.summary()
