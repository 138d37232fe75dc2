"""A pipeline driver for crash tests: order_totals into several sinks in ONE Spark driver.

``python -m tests.spark.driver --url URL [--sinks redis,2pc,sql] [--available-now]
[--master local-cluster[2,1,1024]] [--commit-chunk N]``
(checkpoints under $SPARK_CHECKPOINT_DIR, SQL at $PIPELINE_DATABASE_URL). Tests
kill it with SIGKILL to its process group, or let a sink crash point do it: every
sink gets :func:`tests.spark.crash.kill_at_armed_point` as its crash hook.
"""

from __future__ import annotations

import argparse
import os

import pipelines
from mqcore.commit_journal import DEFAULT_CHUNK
from mqcore.config import MQConfig
from tests.spark.crash import DRIVER_PGID_ENV, kill_at_armed_point


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--sinks", default="redis,2pc,sql")
    parser.add_argument("--available-now", action="store_true")
    parser.add_argument("--max-records", type=int, default=200)
    parser.add_argument("--master", default="local[2]", help="e.g. local-cluster[2,1,1024]")
    parser.add_argument("--baseline", action="store_true")
    parser.add_argument("--commit-chunk", type=int, default=DEFAULT_CHUNK)
    args = parser.parse_args()
    config = MQConfig.from_url(args.url)
    os.environ[DRIVER_PGID_ENV] = str(os.getpgrp())  # Spark's Python workers inherit it
    spark = pipelines.spark_session(args.master, "mqcore-crash-test")
    queries = [
        pipelines.start(
            spark,
            pipelines.RunOptions(
                name="order_totals",
                sink=sink,
                config=config,
                available_now=args.available_now,
                max_records=args.max_records,
                trigger_ms=200,
                baseline=args.baseline,
                crash_hook=kill_at_armed_point,
                commit_chunk=args.commit_chunk,
            ),
        )
        for sink in args.sinks.split(",")
    ]
    for query in queries:
        query.awaitTermination()
    spark.stop()


if __name__ == "__main__":
    main()
