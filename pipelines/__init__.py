"""Pipelines as code: the registry and the driver that runs one with an exactly-once sink.

A pipeline module defines ``NAME``, ``TOPIC``, ``DESCRIPTION`` and
``transform(df)`` turning source rows into ``(partition, id, key, amount)``;
the sinks (mqcore.spark.sinks) keep per-key totals and counts exactly once.
Checkpoint records are named ``<pipeline>.<sink>`` and the pipeline's consumer
group on the topic has the same name.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from mqcore.commit_journal import DEFAULT_CHUNK
from mqcore.config import MQConfig

if TYPE_CHECKING:  # the sinks need pyspark; this package must import without it
    from mqcore.spark.sinks import CrashHook

__all__ = [
    "PROJECT_ROOT",
    "SINKS",
    "CheckpointDirError",
    "RunOptions",
    "checkpoint_dir",
    "get",
    "names",
    "pipeline_id",
    "run",
]

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SINKS = ("redis", "2pc", "sql")
IDENTITY_FILE = "mqcore-identity.json"
log = logging.getLogger(__name__)


def _registry() -> dict[str, ModuleType]:
    from pipelines import order_totals

    return {order_totals.NAME: order_totals}


def names() -> list[str]:
    return sorted(_registry())


def get(name: str) -> ModuleType:
    try:
        return _registry()[name]
    except KeyError:
        raise LookupError(f"unknown pipeline {name!r}; known: {', '.join(names())}") from None


def pipeline_id(name: str, sink: str) -> str:
    """Checkpoint/group name of a pipeline run with one sink, e.g. ``order_totals.redis``."""
    return f"{name}.{sink}"


class CheckpointDirError(RuntimeError):
    """Raised when a Spark checkpoint folder belongs to another deployment, topic or state."""


def default_database_url() -> str:
    return os.environ.get(
        "PIPELINE_DATABASE_URL", f"sqlite:///{PROJECT_ROOT / 'var' / 'pipelines.sqlite3'}"
    )


def checkpoint_dir(name: str, sink: str) -> Path:
    base = os.environ.get("SPARK_CHECKPOINT_DIR") or str(PROJECT_ROOT / "var" / "spark-checkpoints")
    return Path(base) / pipeline_id(name, sink)


def check_identity(folder: Path, config: MQConfig, topic: str, committed: int | None) -> None:
    """Refuse a checkpoint folder of another Redis deployment/topic, or one that lost its state."""
    identity = {
        "redis": config.redacted_url(),
        "control_prefix": config.control_prefix,
        "stream_prefix": config.stream_prefix,
        "topic": topic,
    }
    path = folder / IDENTITY_FILE
    if path.exists():
        stored = json.loads(path.read_text(encoding="utf-8"))
        if stored != identity:
            raise CheckpointDirError(
                f"Spark checkpoint folder {folder} belongs to {stored.get('redis')} topic "
                f"{stored.get('topic')!r}, not {identity['redis']} topic {topic!r}; "
                "set SPARK_CHECKPOINT_DIR to another folder (or delete this one to start over)"
            )
        return
    if committed is not None and not (folder / "spark" / "offsets").exists():
        raise CheckpointDirError(
            f"Redis says batch {committed} of this pipeline was committed, but the Spark "
            f"checkpoint folder {folder} is empty: restarting from scratch would skip data. "
            "Point SPARK_CHECKPOINT_DIR at the folder the pipeline used"
        )
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(identity, sort_keys=True), encoding="utf-8")


@dataclass(frozen=True)
class RunOptions:
    name: str
    sink: str
    config: MQConfig
    master: str | None = "local[*]"  # None: as spark-submit set it
    available_now: bool = False
    max_records: int | None = None  # None: the source's adaptive default
    database_url: str = ""
    run_id: str = ""
    trigger_ms: int = 500
    baseline: bool = False  # at-least-once sink (benchmark only)
    crash_hook: CrashHook | None = None  # called at the sinks' crash points (fault tests)
    commit_chunk: int = DEFAULT_CHUNK  # fields per commit script (mqcore.commit_journal)


def spark_session(master: str | None, app: str) -> Any:
    """A quiet SparkSession. With a ``master`` its Python workers use this interpreter and
    find this code; with None (under ``spark-submit``) everything is as submitted (the
    code reaches the executors by ``--py-files`` or an installed package)."""
    for noisy in ("py4j", "pyspark"):
        logging.getLogger(noisy).setLevel(logging.ERROR)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app)
    if master is not None:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        paths = [
            str(PROJECT_ROOT),
            *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep)),
        ]
        os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
        builder = (
            builder.master(master)
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.executorEnv.PYTHONPATH", os.environ["PYTHONPATH"])
        )
    if master is not None and master.startswith("local"):
        # A local driver talks only to itself: keep it on loopback, not the host's address.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        builder = builder.config("spark.driver.host", "127.0.0.1").config(
            "spark.driver.bindAddress", "127.0.0.1"
        )
    spark = builder.getOrCreate()
    context = spark.sparkContext
    if not context.getConf().contains("spark.sql.shuffle.partitions"):
        # The batch aggregations are small: one shuffle partition per core, not 200.
        spark.conf.set("spark.sql.shuffle.partitions", str(context.defaultParallelism))
    context.setLogLevel("ERROR")
    return spark


def start(spark: Any, opts: RunOptions) -> Any:
    """Start the streaming query of one pipeline with one sink; returns the StreamingQuery."""
    from mqcore.checkpoints import CheckpointStore, new_run_id
    from mqcore.spark.listener import CheckpointListener
    from mqcore.spark.sinks import (
        AtLeastOnceRedisSink,
        RedisAtomicSink,
        SinkContext,
        SqlSink,
        TwoPhaseSinkSource,
    )
    from mqcore.spark.source import MQDataSource
    from mqcore.topics import Topics

    if opts.sink not in SINKS:
        raise ValueError(f"unknown sink {opts.sink!r}; use one of {', '.join(SINKS)}")
    module = get(opts.name)
    pid = pipeline_id(opts.name, opts.sink)
    config = opts.config
    store = CheckpointStore(config)
    folder = checkpoint_dir(opts.name, opts.sink)
    check_identity(folder, config, module.TOPIC, store.committed_batch(pid, opts.sink))
    Topics(config).ensure_group(module.TOPIC, pid)
    run_id = opts.run_id or new_run_id()
    ctx = SinkContext(config, pid, module.TOPIC, pid, opts.sink, run_id, opts.commit_chunk)
    hook = opts.crash_hook

    spark.dataSource.register(MQDataSource)
    spark.dataSource.register(
        TwoPhaseSinkSource.with_crash_hook(hook) if hook else TwoPhaseSinkSource
    )
    if not any(isinstance(x, CheckpointListener) for x in getattr(spark, "_mq_listeners", [])):
        listener = CheckpointListener(config)
        spark.streams.addListener(listener)
        spark._mq_listeners = [listener]
    spark._mq_listeners[0].watch(pid, pid)

    where = {  # the deployment and the topic, as the source and the 2PC sink both take them
        "redis_url": config.url,
        "control_prefix": config.control_prefix,
        "stream_prefix": config.stream_prefix,
        "cluster": str(config.cluster).lower(),
        "encoding": config.encoding,
        "topic": module.TOPIC,
        "group": pid,
    }
    source = (
        spark.readStream.format("mqcore")
        .options(**where)
        .option("startingPosition", "earliest")
        .option("readTasks", str(spark.sparkContext.defaultParallelism))
    )
    if opts.max_records is not None:
        source = source.option("maxRecordsPerTrigger", str(opts.max_records))
    source = source.load()
    rows = module.transform(source)
    writer = rows.writeStream.queryName(pid).option("checkpointLocation", str(folder / "spark"))
    if opts.available_now:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=f"{opts.trigger_ms} milliseconds")
    if opts.sink == "2pc":
        writer = (
            writer.format("mqcore_2pc")
            .options(**where)
            .option("pipeline", pid)
            .option("sink", opts.sink)
            .option("run_id", run_id)
            .option("commit_chunk", str(opts.commit_chunk))
        )
    elif opts.sink == "sql":
        database_url = opts.database_url or default_database_url()
        writer = writer.foreachBatch(SqlSink(ctx, database_url, crash_hook=hook))
    elif opts.baseline:
        writer = writer.foreachBatch(AtLeastOnceRedisSink(ctx))
    else:
        writer = writer.foreachBatch(RedisAtomicSink(ctx, crash_hook=hook))
    log.info("starting pipeline %s (run %s) checkpoint %s", pid, run_id, folder)
    return writer.start()


def run(opts: RunOptions) -> None:
    """Run until stopped (or, with ``available_now``, until what is there is drained)."""
    spark = spark_session(opts.master, pipeline_id(opts.name, opts.sink))
    try:
        query = start(spark, opts)
        query.awaitTermination()
    finally:
        spark.stop()
