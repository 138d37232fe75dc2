"""P10: the order_totals pipeline with the exactly-once Redis sink vs a plain at-least-once sink.

Same Spark session, same query (mqcore source -> transform -> per-batch
aggregation), same data, AvailableNow with 2,000 records per batch; only the
sink differs: the atomic commit script (marker + acks + checkpoint record) vs
plain pipelined HINCRBYs. Rounds alternate the two; each round starts from a
flushed Redis and a fresh Spark checkpoint folder. Budget >= 0.5x.
"""

from __future__ import annotations

import json
import os
import tempfile
import time

from bench.common import BenchContext, Result, interleaved
from mqcore.config import MQConfig
from mqcore.producer import OutgoingMessage, Producer
from mqcore.topics import Topics

ROUNDS = 2


def _one(spark: object, config: MQConfig, client: object, n: int, baseline: bool) -> float:
    import pipelines

    client.flushdb()  # type: ignore[attr-defined]
    Topics(config).create("orders", 2, groups=())
    Producer(config).send_many(
        "orders",
        [
            OutgoingMessage(json.dumps({"customer": f"c{i % 50}", "amount": i % 97}), key=str(i))
            for i in range(n)
        ],
    )
    with tempfile.TemporaryDirectory(prefix="bench-p10-") as tmp:
        os.environ["SPARK_CHECKPOINT_DIR"] = tmp
        opts = pipelines.RunOptions(
            name="order_totals",
            sink="redis",
            config=config,
            available_now=True,
            max_records=2000,
            baseline=baseline,
        )
        start = time.perf_counter()
        query = pipelines.start(spark, opts)
        query.awaitTermination()
        elapsed = time.perf_counter() - start
    return n / elapsed


def run(ctx: BenchContext) -> list[Result]:
    import pipelines

    n = ctx.n(20_000, minimum=4_000)
    saved = os.environ.get("SPARK_CHECKPOINT_DIR")
    with ctx.fresh_redis() as (_server, client, config):
        spark = pipelines.spark_session("local[2]", "bench-p10")
        ctx.measuring()
        try:
            _one(spark, config, client, 2_000, baseline=True)  # warm-up (JVM, Python workers)
            runs = interleaved(
                lambda _: _one(spark, config, client, n, baseline=True),
                lambda _: _one(spark, config, client, n, baseline=False),
                ROUNDS,
            )
        finally:
            spark.stop()
            if saved is None:
                os.environ.pop("SPARK_CHECKPOINT_DIR", None)
            else:
                os.environ["SPARK_CHECKPOINT_DIR"] = saved
    return [
        Result(
            id="P10",
            what=f"order_totals, {n} orders: exactly-once Redis sink vs at-least-once sink",
            ours=runs.ours,
            raw=runs.raw,
            unit="records/s",
            budget=">= 0.5x",
        )
    ]
