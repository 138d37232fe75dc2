"""P7: a DLQ page of 50 out of 1M letters (DeadLetters.page) vs raw XREVRANGE COUNT 50."""

from __future__ import annotations

import json
import time

from bench.common import BenchContext, Result, interleaved
from mqcore.dlq import DeadLetters

_FILL = """
-- KEYS[1] = DLQ stream / ARGV[1] = letters / ARGV[2] = headers JSON
for i = 1, tonumber(ARGV[1]) do
  redis.call('XADD', KEYS[1], '*', 'originalTopic', 'big', 'payload', '{"order":' .. i .. '}',
    'timestamp', '2024-01-01T00:00:00Z', 'failedAt', '2024-01-01T00:00:01Z', 'retryCount', '3',
    'maxRetries', '3', 'partitionId', '0', 'headers', ARGV[2], 'originalMessageId', i .. '-0')
end
return 1
"""


def run(ctx: BenchContext) -> list[Result]:
    total = ctx.n(1_000_000, 20_000)
    calls = 500
    with ctx.fresh_redis() as (_server, client, config):
        keys = config.keys
        client.sadd(keys.registry(), "big")
        fill = client.register_script(_FILL)
        headers = json.dumps({"partitionId": "2", "key": "k", "x-runtime-error-message": "boom"})
        for _ in range(total // 20_000):
            fill(keys=[keys.dlq("big")], args=[20_000, headers])
        ctx.measuring()
        dlq = DeadLetters(config, client)
        dlq_key = keys.dlq("big")
        assert len(dlq.page("big", limit=50).letters) == 50

        def raw_once() -> float:
            start = time.perf_counter()
            for _ in range(calls):
                client.xrevrange(dlq_key, "+", "-", 50)
            return (time.perf_counter() - start) * 1000 / calls

        def ours_once() -> float:
            start = time.perf_counter()
            for _ in range(calls):
                dlq.page("big", limit=50)
            return (time.perf_counter() - start) * 1000 / calls

        runs = interleaved(lambda _: raw_once(), lambda _: ours_once(), 3)
        what = f"DLQ page of 50 out of {total:,} letters (library call)"
        return [runs.result("P7", what, unit="ms", budget="<= 2x")]
