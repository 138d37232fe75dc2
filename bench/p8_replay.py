"""P8: DLQ replay, single and batched (DeadLetters) vs the raw Lua of the same shape.

Raw: the same ``replay_letters`` script called directly with precomputed keys and
arguments (1 id per call / 100 ids per call); ours: ``replay`` / ``replay_many``.
Each side replays its own fresh letters (a replayed letter would be a no-op).
"""

from __future__ import annotations

import json
import time
import uuid

from bench.common import BenchContext, Result, interleaved
from mqcore.dlq import DeadLetters
from mqcore.scripts import lua_source

PARTS = 4


ROUNDS = 5


def run(ctx: BenchContext) -> list[Result]:
    single_n = ctx.n(4_000, 500)
    batch_n = ctx.n(40_000, 2_000)
    with ctx.fresh_redis() as (_server, client, config):
        keys = config.keys
        client.sadd(keys.registry(), "t")
        client.hset(keys.meta("t"), "partitionCount", PARTS)
        headers = json.dumps({"partitionId": "1", "key": "k"})
        ids: list[str] = []
        total = 2 * (single_n + batch_n)
        for start in range(0, total, 1000):
            pipe = client.pipeline(transaction=False)
            for i in range(start, min(total, start + 1000)):
                pipe.xadd(keys.dlq("t"), {"originalTopic": "t", "payload": f"p{i}",
                                          "partitionId": 0, "headers": headers,
                                          "retryCount": 3, "maxRetries": 3})  # fmt: skip
            ids.extend(x.decode() for x in pipe.execute())
        ctx.measuring()
        raw_single, ours_single = ids[:single_n], ids[single_n : 2 * single_n]
        rest = ids[2 * single_n :]
        raw_batch, ours_batch = rest[:batch_n], rest[batch_n:]
        script = client.register_script(lua_source("replay_letters"))
        script_keys = [keys.dlq("t"), keys.dlq_replays("t"), keys.meta("t"),
                       keys.payload_index("t"),
                       *(keys.partition("t", p) for p in range(PARTS))]  # fmt: skip
        prefix = keys.payload_topic_prefix("t")

        def raw_call(chunk: list[str]) -> None:
            now = int(time.time() * 1000)
            script(
                keys=script_keys,
                args=[now, "2024-01-01T00:00:00.000Z", "", "0", "t", -1, "0", "{}",
                      prefix, prefix, uuid.uuid4().hex, *chunk],
            )  # fmt: skip

        dlq = DeadLetters(config, client)

        def timed(fn: object, items: list[str], step: int) -> float:
            start = time.perf_counter()
            for i in range(0, len(items), step):
                fn(items[i : i + step])  # type: ignore[operator]
            return len(items) / (time.perf_counter() - start)

        def raw_timed(items: list[str], step: int) -> float:
            """The raw calls are the baseline's: their script time is not ours to bound
            (100 letters per call, where ``replay_many`` sends ``REPLAY_BATCH``)."""
            with ctx.unwatched():
                return timed(raw_call, items, step)

        def rounds(raw_ids: list[str], our_ids: list[str], step: int, ours: object) -> tuple:
            """Each round replays its own slice of the raw and of our letters."""
            size = len(raw_ids) // ROUNDS

            def part(ids: list[str], r: int) -> list[str]:
                return ids[r * size : (r + 1) * size]

            runs = interleaved(
                lambda r: raw_timed(part(raw_ids, r), step),
                lambda r: timed(ours, part(our_ids, r), step),
                ROUNDS,
            )
            return runs.ours, runs.raw

        ours1, raw1 = rounds(raw_single, ours_single, 1, lambda c: dlq.replay("t", c[0]))
        oursb, rawb = rounds(raw_batch, ours_batch, 100, lambda c: dlq.replay_many("t", c))
        assert client.xlen(keys.partition("t", 1)) == ROUNDS * (
            2 * (single_n // ROUNDS) + 2 * (batch_n // ROUNDS)
        )
        return [
            Result("P8", "DLQ replay, one letter per call", ours1, raw1, "msg/s", ">= 0.8x"),
            Result(
                "P8.batched", "DLQ replay, 100 letters per call", oursb, rawb, "msg/s", ">= 0.7x"
            ),
        ]
