"""R6: a poison message reaches the DLQ atomically after max deliveries; the partition flows on."""

from __future__ import annotations

import json
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

TOPIC, SINK, GROUP = "r6", "sink:r6", "default-group"


def test_poison_goes_to_dlq_and_partition_keeps_flowing(
    r: redis.Redis, mq_config: MQConfig, redis_url: str
) -> None:
    setup_topic(mq_config, TOPIC, 2)
    keys = mq_config.keys
    poison = {3, 10, 17}
    produced = produce(mq_config, TOPIC, 30, poison=poison, max_retries=2)
    good = [t for t in produced if t[1] not in poison]
    worker = Worker(redis_url, TOPIC, SINK, "--poison", "POISON").ready()
    try:
        wait_for(
            lambda: r.xlen(keys.dlq(TOPIC)) == 3 and r.llen(SINK) >= len(good),
            30,
            "poison in the DLQ and good messages handled",
        )
        wait_for(lambda: pending_total(r, mq_config, TOPIC, 2) == 0, 10, "nothing pending")
        worker.signal(signal.SIGTERM)
        assert worker.wait(15) == 0
        stats = worker.stats()
    finally:
        worker.kill()
    report = check(good, sink_records(r, SINK))
    assert report.lost == [], report.summary()
    assert report.duplicates == {}, report.summary()
    assert stats["dead"] == 3, stats
    assert stats["retried"] == 6, stats  # 3 messages x 2 retries
    letters = r.xrange(keys.dlq(TOPIC))
    seqs = set()
    for _, raw in letters:
        fields = {k.decode(): v.decode() for k, v in raw.items()}
        assert fields["retryCount"] == "2"
        headers = json.loads(fields["headers"])
        assert headers["partitionId"] == fields["partitionId"]
        assert headers["x-runtime-error-type"] == "ValueError"
        seqs.add(json.loads(fields["payload"])["seq"])
        stream = keys.partition(TOPIC, int(fields["partitionId"]))
        # the failed entry itself is acked (DLQ add + ack were one script)
        assert (
            r.xpending_range(
                stream, GROUP, fields["originalMessageId"], fields["originalMessageId"], 1
            )
            == []
        )
    assert seqs == poison
    assert r.zcard(keys.retry_zset(TOPIC)) == 0
