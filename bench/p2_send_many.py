"""P2: ``Producer.send_many`` (batched) vs raw pipelined XADD of identical entries.

Same fields, no MAXLEN on either side, same batch size (1000); budget >= 0.6x raw.
"""

from __future__ import annotations

from typing import Any

from bench.common import BenchContext, Result, interleaved, rate
from mqcore.producer import OutgoingMessage, Producer
from mqcore.topics import Topics

ROUNDS = 11
PAYLOAD = "x" * 200
BATCH = 1000


def run(ctx: BenchContext) -> list[Result]:
    n = ctx.n(30_000, minimum=2_000)  # per round and side
    with ctx.fresh_redis() as (_server, client, config):
        Topics(config).create("bench", 4)
        producer = Producer(config)
        messages = [OutgoingMessage(PAYLOAD, key=f"k{i % 997}") for i in range(n)]
        producer.send_many("bench", messages[:BATCH])
        # The raw side writes exactly the entries ours wrote (fields copied back from Redis).
        template: list[tuple[str, dict[Any, Any]]] = []
        for p in range(4):
            key = config.keys.partition("bench", p)
            for _, fields in client.xrange(key, count=BATCH):
                template.append((key, fields))
        entries = [template[i % len(template)] for i in range(n)]
        ctx.measuring()

        def ours() -> float:
            return rate(n, lambda: producer.send_many("bench", messages, batch_size=BATCH))

        def raw() -> float:
            def loop() -> None:
                for start in range(0, n, BATCH):
                    pipe = client.pipeline(transaction=False)
                    for key, fields in entries[start : start + BATCH]:
                        pipe.xadd(key, fields)
                    pipe.execute()

            return rate(n, loop)

        runs = interleaved(lambda _: raw(), lambda _: ours(), ROUNDS)
        producer.close()
    what = f"Producer.send_many, batch {BATCH} ({ROUNDS}x{n} msgs, 200 B, keyed)"
    return [runs.result("P2", what, unit="msg/s", budget=">= 0.6x")]
