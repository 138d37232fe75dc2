"""Run a pipeline under ``spark-submit`` (a standalone cluster, Kubernetes, YARN).

::

    python -m pipelines.package dist/opsdash-pipelines.zip
    spark-submit --master spark://spark-master:7077 \\
        --py-files dist/opsdash-pipelines.zip \\
        pipelines/submit.py order_totals --sink redis \\
        --redis-url redis://mq-redis:6379/0 --checkpoint-dir s3a://bucket/spark-checkpoints

The Spark master, executors and memory are spark-submit's (nothing here overrides
them). The code reaches the executors in the ``--py-files`` zip; the libraries it
needs (redis, hiredis, orjson, pyarrow) must be installed on every node, or shipped
as a packed virtualenv (``--archives``): docs/deploy.md shows both. The checkpoint
folder must be on storage the driver reaches after a restart on another node.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a file by spark-submit: the zip or the checkout
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pipelines
from mqcore.config import ENCODINGS, MQConfig


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pipelines/submit.py", description=__doc__.split("\n")[0])
    parser.add_argument("name", help=f"pipeline: {', '.join(pipelines.names())}")
    parser.add_argument("--sink", choices=pipelines.SINKS, default="redis")
    parser.add_argument("--redis-url", default=os.environ.get("MQ_REDIS_URL", ""))
    parser.add_argument("--control-prefix", default="")
    parser.add_argument("--stream-prefix", default="")
    parser.add_argument("--cluster", action="store_true", help="the MQ is a Redis Cluster")
    parser.add_argument(
        "--encoding",
        choices=ENCODINGS,
        default="plain",
        help="java-kryo where a Java service shares the MQ (commit frontiers Java can read)",
    )
    parser.add_argument("--checkpoint-dir", default=os.environ.get("SPARK_CHECKPOINT_DIR", ""))
    parser.add_argument("--database-url", default="", help="SQL sink database URL")
    parser.add_argument("--available-now", action="store_true", help="drain and exit")
    parser.add_argument("--max-records", type=int, default=None)
    parser.add_argument("--trigger-ms", type=int, default=500)
    args = parser.parse_args(argv)
    if not args.redis_url:
        parser.error("--redis-url (or MQ_REDIS_URL) is required")
    if args.max_records is not None and args.max_records <= 0:
        parser.error("--max-records must be positive")
    try:
        pipelines.get(args.name)
    except LookupError as exc:
        parser.error(str(exc))
    overrides: dict[str, object] = {"cluster": args.cluster, "encoding": args.encoding}
    if args.control_prefix:
        overrides["control_prefix"] = args.control_prefix
    if args.stream_prefix:
        overrides["stream_prefix"] = args.stream_prefix
    if args.checkpoint_dir:
        os.environ["SPARK_CHECKPOINT_DIR"] = args.checkpoint_dir
    opts = pipelines.RunOptions(
        name=args.name,
        sink=args.sink,
        config=MQConfig.from_url(args.redis_url, **overrides),
        master=None,
        available_now=args.available_now,
        max_records=args.max_records,
        database_url=args.database_url,
        trigger_ms=args.trigger_ms,
    )
    try:
        pipelines.run(opts)
    except pipelines.CheckpointDirError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
