"""P1: ``Producer.send`` one message per call vs a raw single XADD of the same fields.

Both write identical entries (same fields, no MAXLEN: neither trims) to a fresh
redis-server, one round trip per message; budget >= 0.8x raw. One round trip per
message makes the rate follow this machine's loopback latency, which flips between
about 40 and 120 us from one tenth of a second to the next: the sides alternate in
many short rounds and each side's rate is pooled over all of them (total messages /
total time). 11 rounds of 3,000 and their medians gave ratios of 0.53-1.64.
"""

from __future__ import annotations

import json

from bench.common import BenchContext, Result, interleaved, rate
from mqcore.clock import iso_now
from mqcore.producer import Producer
from mqcore.topics import Topics

ROUNDS = 41
PAYLOAD = "x" * 200


def run(ctx: BenchContext) -> list[Result]:
    n = ctx.n(800, minimum=100)  # per round and side
    with ctx.fresh_redis() as (_server, client, config):
        Topics(config).create("bench", 1)
        producer = Producer(config)
        producer.send("bench", "warm-up")
        ctx.measuring()
        stream = config.keys.partition("bench", 0)

        def ours() -> float:
            return rate(n, lambda: [producer.send("bench", PAYLOAD) for _ in range(n)])

        def raw() -> float:
            def loop() -> None:
                for _ in range(n):
                    fields = {
                        "payload": PAYLOAD,
                        "timestamp": iso_now(),
                        "retryCount": "0",
                        "maxRetries": "3",
                        "topic": "bench",
                        "partitionId": "0",
                        "headers": json.dumps({"partitionId": "0"}, separators=(",", ":")),
                    }
                    client.xadd(stream, fields)

            return rate(n, loop)

        runs = interleaved(lambda _: raw(), lambda _: ours(), ROUNDS)
        producer.close()
    what = f"Producer.send, 1 msg/call ({ROUNDS}x{n} msgs, 200 B)"
    return [runs.result("P1", what, unit="msg/s", budget=">= 0.8x", pooled=True)]
