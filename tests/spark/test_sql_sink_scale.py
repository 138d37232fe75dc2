"""The SQL sink at scale: a batch larger than what the driver may collect.

The driver runs with ``spark.driver.maxResultSize=1m`` and a small heap: a sink
that collected the batch's rows on the driver fails there ("Total size of
serialized results ... is bigger than spark.driver.maxResultSize"). The SQL sink's
executors stage the rows in the database and hand the driver only a summary per
partition, so one 60,000-row batch commits, on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mqcore.config import MQConfig
from mqcore.producer import OutgoingMessage, Producer
from mqcore.sinkstate import SqlDatabase
from mqcore.topics import Topics
from tests.spark.test_exactly_once_crashes import ROOT

pytestmark = [pytest.mark.spark, pytest.mark.redis, pytest.mark.timeout(600)]

ROWS = 60_000


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'sink.sqlite3'}"
        return
    from tests.harness.postgres import scratch_database

    with scratch_database(request.getfixturevalue("postgres_url"), "opsdash_sink") as url:
        yield url


def test_a_batch_larger_than_the_driver_may_collect_commits(
    mq_config: MQConfig, redis_url: str, database_url: str, tmp_path: Path
) -> None:
    Topics(mq_config).create("orders", 2, groups=())
    producer = Producer(mq_config)
    totals: dict[str, int] = {}
    for start in range(0, ROWS, 10_000):
        batch = [(f"customer-{i % 101}", i % 53) for i in range(start, start + 10_000)]
        producer.send_many(
            "orders",
            [OutgoingMessage(f'{{"customer":"{c}","amount":{a}}}') for c, a in batch],
        )
        for customer, amount in batch:
            totals[customer] = totals.get(customer, 0) + amount
    env = {
        **os.environ,
        "SPARK_CHECKPOINT_DIR": str(tmp_path / "cp"),
        "PIPELINE_DATABASE_URL": database_url,
        "PYTHONPATH": str(ROOT),
        "PYSPARK_SUBMIT_ARGS": (
            "--driver-memory 512m --conf spark.driver.maxResultSize=1m pyspark-shell"
        ),
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.spark.driver",
            "--url",
            redis_url,
            "--sinks",
            "sql",
            "--available-now",
            "--max-records",
            str(ROWS),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        timeout=400,
    )
    assert done.returncode == 0, (done.stdout + done.stderr).decode(errors="replace")[-4000:]
    db = SqlDatabase(database_url)
    try:
        assert db.committed_batch("order_totals.sql") == 0  # one batch held all of it
        assert len(db.message_ids("order_totals.sql")) == ROWS
        assert db.totals("order_totals.sql") == totals
        assert db.staged_count("order_totals.sql") == 0
    finally:
        db.close()
