"""P3: the Consumer loop (no-op handler, batched fenced acks) vs a raw XREADGROUP + XACK loop.

Both read the same entries from a fresh redis-server in batches of 100 and do
the same decoding (:func:`mqcore.consumer.decode_message`); the raw loop
pipelines each batch's XACK with the next XREADGROUP, as the consumer pipelines
its fenced ack script with the next read. Each round uses fresh consumer groups
on the same stream; rounds interleave raw and ours. Both clocks start when the
first batch is in hand (the consumer's thread and lease start-up are not part of
its loop). Budget >= 0.7x raw.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from bench.common import BenchContext, Result, interleaved
from mqcore.config import MQConfig
from mqcore.consumer import Consumer, ConsumerOptions, decode_message
from mqcore.producer import OutgoingMessage, Producer
from mqcore.topics import Topics

ROUNDS = 5
TOPIC = "bench"
PAYLOAD = "x" * 200


def _raw(config: MQConfig, n: int, group: str) -> float:
    client = config.client()
    stream = config.keys.partition(TOPIC, 0)
    done = 0
    acks: list[bytes] = []
    start = 0.0
    while done < n:
        pipe = client.pipeline(transaction=False)
        if acks:
            pipe.xack(stream, group, *acks)
        pipe.xreadgroup(group, "raw", {stream: ">"}, count=100, block=100)
        reply = pipe.execute()[-1]
        acks = []
        if not start:
            start = time.perf_counter()
        for entry_id, fields in reply[0][1] if reply else []:
            decode_message(TOPIC, 0, entry_id.decode(), fields)
            acks.append(entry_id)
            done += 1
    if acks:
        client.xack(stream, group, *acks)
    elapsed = time.perf_counter() - start
    client.close()
    return n / elapsed


def _ours(config: MQConfig, n: int, group: str) -> float:
    options = ConsumerOptions(
        group=group, batch_size=100, ack_batch=100, block_ms=100, retry_move_interval_ms=0
    )
    first: list[float] = []

    def handler(_message: object) -> None:
        if not first:
            first.append(time.perf_counter())

    consumer = Consumer(config, TOPIC, handler, options)
    consumer.start()
    while consumer.stats.acked < n:
        time.sleep(0.001)
    elapsed = time.perf_counter() - first[0]
    consumer.stop(30)
    return n / elapsed


def run(ctx: BenchContext) -> list[Result]:
    n = ctx.n(50_000, minimum=2_000)
    with ctx.fresh_redis() as (_server, client, config):
        topics = Topics(config)
        topics.create(TOPIC, 1)
        with Producer(config) as producer:
            for start in range(0, n, 10_000):
                batch = [
                    OutgoingMessage(payload=PAYLOAD, key=f"k{i}")
                    for i in range(start, min(n, start + 10_000))
                ]
                producer.send_many(TOPIC, batch)
        ctx.measuring()

        def in_fresh_group(run: Callable[[MQConfig, int, str], float], name: str) -> float:
            topics.ensure_group(TOPIC, name)
            try:
                return run(config, n, name)
            finally:
                client.xgroup_destroy(config.keys.partition(TOPIC, 0), name)

        runs = interleaved(
            lambda i: in_fresh_group(_raw, f"raw-{i}"),
            lambda i: in_fresh_group(_ours, f"ours-{i}"),
            ROUNDS,
        )
    what = f"consumer loop, no-op handler, batched acks ({ROUNDS}x{n} msgs, 200 B)"
    per_round = {
        "raw_runs": [round(x) for x in runs.raw_runs],
        "ours_runs": [round(x) for x in runs.ours_runs],
    }
    return [runs.result("P3", what, unit="msg/s", budget=">= 0.7x", extra=per_round)]
