"""The pipelines on a real cluster topology: ``local-cluster[2,1,1024]``.

Spark's local-cluster master starts a standalone master and two workers inside
the driver's JVM, and each worker launches its executor as a separate JVM with
its own Python workers, as on a real cluster: the source's readers and the
sinks' tasks are pickled across process boundaries, and nothing may lean on
state shared with the driver. A live producer writes orders while the driver
(all three sinks) runs; the driver's process group is killed with SIGKILL
mid-stream, and a new driver restarts from the checkpoints and drains the rest
with AvailableNow. Every sink's output equals the input exactly.
"""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

import pytest

from mqcore.checkpoints import CheckpointStore
from mqcore.config import MQConfig
from mqcore.topics import Topics
from tests.spark.crash import CRASH_ENV, CRASH_LOG_ENV
from tests.spark.test_exactly_once_crashes import (
    ROOT,
    LiveProducer,
    _driver,
    _kill,
    _reap,  # noqa: F401 - the autouse fixture that kills leftover drivers
    _tail,
    _wait_for_progress,
    assert_exact,
)

pytestmark = [pytest.mark.spark, pytest.mark.faults, pytest.mark.redis, pytest.mark.timeout(600)]

MASTER = "local-cluster[2,1,1024]"


def test_local_cluster_kill_9_mid_stream_is_exact(
    mq_config: MQConfig, redis_url: str, tmp_path: Path
) -> None:
    Topics(mq_config).create("orders", 4, groups=())
    store = CheckpointStore(mq_config)
    db_url = f"sqlite:///{tmp_path / 'sink.sqlite3'}"
    env = {
        **os.environ,
        "SPARK_CHECKPOINT_DIR": str(tmp_path / "cp"),
        "PIPELINE_DATABASE_URL": db_url,
        "PYTHONPATH": str(ROOT),
        CRASH_LOG_ENV: str(tmp_path / "crashes.log"),
    }
    env.pop(CRASH_ENV, None)
    producer = LiveProducer(mq_config)
    producer.start()
    try:
        proc = _driver(env, redis_url, "--master", MASTER)
        _wait_for_progress(store, proc, 240)
        time.sleep(random.Random(5).uniform(0.5, 2.0))
        _kill(proc)  # SIGKILL to the process group: driver, workers, executors
    finally:
        producer.halt.set()
        producer.join(10)
    drain = _driver(
        env, redis_url, "--master", MASTER, "--available-now", "--max-records", "100000"
    )
    assert drain.wait(300) == 0, _tail(drain)
    assert_exact(mq_config, store, db_url, producer.sent)


def test_spark_submit_with_the_packaged_code_on_local_cluster(
    mq_config: MQConfig, redis_url: str, tmp_path: Path
) -> None:
    """docs/deploy.md's recipe: ``spark-submit --py-files`` the zip of ``python -m
    pipelines.package`` and ``pipelines/submit.py``. The executors get no PYTHONPATH:
    they import mqcore from the zip. The drain is exact."""
    import subprocess
    import sys

    import pyspark

    from mqcore.producer import OutgoingMessage, Producer
    from pipelines.package import build

    Topics(mq_config).create("orders", 3, groups=())
    orders = [(f"c{i % 7}", i % 13) for i in range(3000)]
    Producer(mq_config).send_many(
        "orders", [OutgoingMessage(f'{{"customer":"{c}","amount":{a}}}') for c, a in orders]
    )
    archive = build(tmp_path / "opsdash-pipelines.zip")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env |= {"PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    done = subprocess.run(
        [
            str(submit),
            "--master",
            MASTER,
            "--conf",
            "spark.ui.enabled=false",
            "--py-files",
            str(archive),
            str(ROOT / "pipelines" / "submit.py"),
            "order_totals",
            "--sink",
            "redis",
            "--redis-url",
            redis_url,
            "--checkpoint-dir",
            str(tmp_path / "cp"),
            "--available-now",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    totals: dict[str, int] = {}
    for customer, amount in orders:
        totals[customer] = totals.get(customer, 0) + amount
    out = mq_config.client().hgetall(mq_config.keys.sink_output("order_totals.redis", "totals"))
    assert {k.decode(): int(v) for k, v in out.items()} == totals
