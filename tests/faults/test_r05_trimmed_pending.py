"""R5: pending entries trimmed/deleted before reclaim are counted lost, never handled empty."""

from __future__ import annotations

import signal

import pytest
import redis

from mqcore.config import MQConfig
from tests.faults.checker import Worker, pending_total, produce, setup_topic, sink_records, wait_for

pytestmark = [pytest.mark.faults, pytest.mark.redis]

TOPIC, SINK, GROUP = "r5", "sink:r5", "default-group"


def test_trimmed_and_deleted_pending_ids(
    r: redis.Redis, mq_config: MQConfig, redis_url: str
) -> None:
    setup_topic(mq_config, TOPIC, 1)
    keys = mq_config.keys
    stream = keys.partition(TOPIC, 0)
    worker = Worker(redis_url, TOPIC, SINK, "--claim-idle-ms", "300", "--reclaim-ms", "200").ready()
    try:
        wait_for(lambda: r.get(keys.lease(TOPIC, GROUP, 0)) == worker.name.encode(), 10, "lease")
        # a ghost consumer takes 10 entries atomically with their XADD, so the running
        # worker never sees them as new: they can only come back through XAUTOCLAIM
        pipe = r.pipeline(transaction=True)
        for seq in range(10):
            pipe.xadd(stream, {"payload": f'{{"producer": "ghost", "seq": {seq}}}',
                               "retryCount": "0", "maxRetries": "3"})  # fmt: skip
        pipe.xreadgroup(GROUP, "ghost", {stream: ">"}, count=100)
        replies = pipe.execute()
        ids = [i.decode() for i in replies[:10]]
        assert len(replies[-1][0][1]) == 10
        r.xdel(stream, ids[2], ids[5])
        r.xtrim(stream, minid=ids[1], approximate=False)  # trims ids[0]
        wait_for(lambda: pending_total(r, mq_config, TOPIC, 1) == 0, 20, "reclaim")
        produced = produce(mq_config, TOPIC, 5)  # the partition keeps flowing
        wait_for(lambda: r.llen(SINK) >= 12, 10, "new messages")
        worker.signal(signal.SIGTERM)
        assert worker.wait(15) == 0
        stats = worker.stats()
    finally:
        worker.kill()
    records = sink_records(r, SINK)
    handled = sorted(x["seq"] for x in records if x["producer"] == "ghost")
    assert handled == [1, 3, 4, 6, 7, 8, 9]
    assert sorted(x["seq"] for x in records if x["producer"] == "p1") == [s for _, s in produced]
    assert stats["lost_by_retention"] == 3, stats
    assert stats["reclaimed"] == 7, stats
