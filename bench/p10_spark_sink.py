"""P10: the order_totals pipeline (exactly-once Redis sink) draining a backlog, and its latency.

- **P10.raw**: a backlog of orders drained by the pipeline on ``local[2]`` with its
  defaults (adaptive read limit, AvailableNow), timed from its first batch's trigger to
  the end of its last batch (start-up excluded: the session, the JVM's JIT warmed by
  three drains first, and each query's own start; the rate with the query's start
  included is reported beside it as ``with_query_start``), vs a plain
  single-process Python loop doing the same sums over the same Redis (XRANGE pages
  of 5,000, json, one HINCRBY pipeline). Output is checked equal. Budget >= 0.5x.
- **P10**: the same drain with the exactly-once sink vs a plain at-least-once sink
  (pipelined HINCRBYs, no marker): what exactly-once costs. Budget >= 0.5x.
- **P10.latency**: a steady 1,000 msg/s stream through the running pipeline (default
  trigger); p50 of produce -> visible in the sink (the sink moves the pipeline's group
  to a batch's end in the commit, so an entry is visible once the group passed it).
  Budget 2 s.

Rounds alternate the sides; each drain starts from a fresh Spark checkpoint folder.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import threading
import time
from typing import Any

from bench.common import BenchContext, Result, interleaved
from mqcore.codec import id_tuple
from mqcore.config import MQConfig
from mqcore.producer import OutgoingMessage, Producer
from mqcore.topics import Topics

ROUNDS = 2
PARTITIONS = 4
PAGE = 5000
LATENCY_RATE = 1000  # messages per second
LATENCY_SECONDS = 20
WALL: list[float] = []  # records/s of each drain from query start (start-up included)


def _fill(client: Any, config: MQConfig, n: int) -> None:
    client.flushdb(asynchronous=True)
    Topics(config).create("orders", PARTITIONS, groups=())
    producer = Producer(config)
    for start in range(0, n, 10_000):
        producer.send_many(
            "orders",
            [
                OutgoingMessage(
                    json.dumps({"customer": f"c{i % 50}", "amount": i % 97}), key=str(i)
                )
                for i in range(start, min(n, start + 10_000))
            ],
        )


def _expected(n: int) -> dict[bytes, bytes]:
    totals: dict[str, int] = {}
    for i in range(n):
        totals[f"c{i % 50}"] = totals.get(f"c{i % 50}", 0) + i % 97
    return {k.encode(): str(v).encode() for k, v in totals.items()}


def _raw_loop(client: Any, config: MQConfig, n: int) -> float:
    """The plain loop: XRANGE pages, json, per-key sums, one HINCRBY pipeline."""
    _fill(client, config, n)
    begin = time.perf_counter()
    totals: dict[str, int] = {}
    counts: dict[str, int] = {}
    for part in range(PARTITIONS):
        key = config.keys.partition("orders", part)
        cursor = "-"
        while True:
            rows = client.xrange(key, cursor, "+", count=PAGE)
            for _id, fields in rows:
                try:
                    order = json.loads(fields[b"payload"])
                    customer, amount = order["customer"], int(order["amount"])
                except (KeyError, TypeError, ValueError):
                    continue
                totals[customer] = totals.get(customer, 0) + amount
                counts[customer] = counts.get(customer, 0) + 1
            if len(rows) < PAGE:
                break
            cursor = "(" + rows[-1][0].decode()
    pipe = client.pipeline(transaction=False)
    for customer, amount in totals.items():
        pipe.hincrby("raw:totals", customer, amount)
    for customer, count in counts.items():
        pipe.hincrby("raw:counts", customer, count)
    pipe.execute()
    elapsed = time.perf_counter() - begin
    if client.hgetall("raw:totals") != _expected(n):
        raise AssertionError("P10: the plain loop's totals are wrong")
    return n / elapsed


def _drain(spark: Any, config: MQConfig, client: Any, n: int, *, baseline: bool = False) -> float:
    """The pipeline drains the backlog (fresh checkpoint); records/s over its batches, from
    the first batch's trigger to the end of the last (the query's own start-up, about 1-2 s
    of JVM setup and the data source's Python planner, is left out and kept in
    ``WALL``); output checked."""
    import pipelines

    _fill(client, config, n)
    with tempfile.TemporaryDirectory(prefix="bench-p10-") as tmp:
        os.environ["SPARK_CHECKPOINT_DIR"] = tmp
        opts = pipelines.RunOptions(
            name="order_totals", sink="redis", config=config, available_now=True, baseline=baseline
        )
        begin = time.perf_counter()
        query = pipelines.start(spark, opts)
        query.awaitTermination()
        WALL.append(n / (time.perf_counter() - begin))
        progress = [p for p in query.recentProgress if p.numInputRows]
    totals = config.keys.sink_output("order_totals.redis", "totals")
    if client.hgetall(totals) != _expected(n):
        raise AssertionError("P10: the pipeline's totals differ from the input's")
    from mqcore.spark.listener import iso_to_ms

    first = iso_to_ms(progress[0].timestamp)
    last = iso_to_ms(progress[-1].timestamp) + progress[-1].durationMs["triggerExecution"]
    return n / ((last - first) / 1000)


def _latency(spark: Any, config: MQConfig, client: Any) -> tuple[float, float, int]:
    """p50 and p95 (ms) of produce -> visible, and the messages measured."""
    import pipelines

    client.flushdb(asynchronous=True)
    Topics(config).create("orders", PARTITIONS, groups=())
    sent: list[tuple[int, str, float]] = []  # (partition, id, sent at)
    seen: dict[str, float] = {}
    stop = threading.Event()

    def produce() -> None:
        producer = Producer(config)
        per_tick, tick = LATENCY_RATE // 100, 0.01
        next_at = time.monotonic()
        i = 0
        while not stop.is_set():
            for _ in range(per_tick):
                at = time.monotonic()
                r = producer.send("orders", json.dumps({"customer": f"c{i % 50}", "amount": 1}))
                sent.append((r.partition, r.id, at))
                i += 1
            next_at += tick
            time.sleep(max(0.0, next_at - time.monotonic()))

    def watch() -> None:  # when each partition's group passed which id
        pid = "order_totals.redis"
        while not stop.is_set() or len(seen) < PARTITIONS:
            now = time.monotonic()
            for part in range(PARTITIONS):
                groups = client.xinfo_groups(config.keys.partition("orders", part))
                for g in groups:
                    if g["name"].decode() == pid:
                        last = g["last-delivered-id"].decode()
                        marks.append((part, id_tuple(last), now))
            if stop.is_set():
                break
            time.sleep(0.01)

    marks: list[tuple[int, tuple[int, int], float]] = []
    with tempfile.TemporaryDirectory(prefix="bench-p10-") as tmp:
        os.environ["SPARK_CHECKPOINT_DIR"] = tmp
        opts = pipelines.RunOptions(name="order_totals", sink="redis", config=config)
        query = pipelines.start(spark, opts)
        threads = [threading.Thread(target=produce), threading.Thread(target=watch)]
        for t in threads:
            t.start()
        time.sleep(LATENCY_SECONDS)
        stop.set()
        for t in threads:
            t.join(30)
        time.sleep(3)  # the last batch commits
        marks_done = list(marks)
        query.stop()
    delays = []
    for part, entry_id, at in sent[len(sent) // 5 :]:  # skip the first fifth (warm-up)
        want = id_tuple(entry_id)
        visible = next((t for p, last, t in marks_done if p == part and last >= want), None)
        if visible is not None:
            delays.append((visible - at) * 1000)
    if not delays:
        raise AssertionError("P10.latency: no message became visible")
    delays.sort()
    return statistics.median(delays), delays[int(len(delays) * 0.95) - 1], len(delays)


def _unwatched_raw(ctx: BenchContext, client: Any, config: MQConfig, n: int) -> float:
    with ctx.unwatched():  # its pages of 5,000 are the baseline's, not ours
        return _raw_loop(client, config, n)


def run(ctx: BenchContext) -> list[Result]:
    import pipelines

    n = ctx.n(300_000, minimum=20_000)
    saved = os.environ.get("SPARK_CHECKPOINT_DIR")
    with ctx.fresh_redis() as (_server, client, config):
        spark = pipelines.spark_session("local[2]", "bench-p10")
        try:
            for _ in range(3):  # warm-up: the JVM's JIT, Python workers
                _drain(spark, config, client, min(n, 200_000))
            ctx.measuring()
            WALL.clear()
            raw = interleaved(
                lambda _: _unwatched_raw(ctx, client, config, n),
                lambda _: _drain(spark, config, client, n),
                ROUNDS,
            )
            with_start = statistics.median(WALL)
            sinks = interleaved(
                lambda _: _drain(spark, config, client, n, baseline=True),
                lambda _: _drain(spark, config, client, n),
                ROUNDS,
            )
            p50, p95, measured = _latency(spark, config, client)
        finally:
            spark.stop()
            if saved is None:
                os.environ.pop("SPARK_CHECKPOINT_DIR", None)
            else:
                os.environ["SPARK_CHECKPOINT_DIR"] = saved
    return [
        raw.result(
            "P10.raw",
            f"order_totals drains {n} orders (exactly once, local[2]) vs a plain Python loop",
            unit="records/s",
            budget=">= 0.5x",
            extra={"with_query_start": round(with_start, 1)},
        ),
        sinks.result(
            "P10",
            f"order_totals, {n} orders: exactly-once Redis sink vs at-least-once sink",
            unit="records/s",
            budget=">= 0.5x",
        ),
        Result(
            id="P10.latency",
            what=f"{LATENCY_RATE} msg/s through the running pipeline: p50 produce -> visible",
            ours=p50,
            raw=2000.0,
            unit="ms",
            budget="<= 1.0x",
            extra={"p95_ms": round(p95, 1), "messages": measured},
        ),
    ]
