"""R1: a consumer killed with SIGKILL mid-batch loses nothing; duplicates only for its entries."""

from __future__ import annotations

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

TOPIC, SINK, N = "r1", "sink:r1", 40


@pytest.mark.parametrize("point", ["after_read", "after_side_effect", "after_ack"])
def test_kill_9_at_crash_point_loses_nothing(
    r: redis.Redis, mq_config: MQConfig, redis_url: str, point: str
) -> None:
    setup_topic(mq_config, TOPIC, 2)
    produced = produce(mq_config, TOPIC, N)
    crashed = Worker(
        redis_url, TOPIC, SINK, "--crash-at", point, "--crash-after", "7", "--ack-batch", "5"
    ).ready()
    assert crashed.wait(30) == -9
    crashed_name = crashed.name
    crashed.kill()
    assert pending_total(r, mq_config, TOPIC, 2) > 0 or point == "after_ack"
    peer = Worker(redis_url, TOPIC, SINK).ready()
    try:
        wait_for(
            lambda: (
                check(produced, sink_records(r, SINK)).lost == []
                and pending_total(r, mq_config, TOPIC, 2) == 0
            ),
            30,
            "the peer to drain the crashed consumer's work",
        )
    finally:
        peer.kill()
    records = sink_records(r, SINK)
    report = check(produced, records)
    assert report.lost == [], report.summary()
    first_by = {}
    for rec in records:
        first_by.setdefault((rec["producer"], rec["seq"]), rec["consumer"])
    # a duplicate is only ever an entry the crashed consumer had handled but not acked
    assert all(first_by[tag] == crashed_name for tag in report.duplicates), report.summary()
    assert report.reordered == [], report.summary()
    assert report.epoch_regressions == [], report.summary()
