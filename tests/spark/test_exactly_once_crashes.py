"""R15 + R16: the order_totals pipeline into all three sinks survives kill -9 of the driver.

One driver process runs the redis, 2pc and sql queries together (one JVM start
per run keeps this affordable). A live producer writes orders throughout. The
driver dies at named crash points inside the sink protocols (R16:
``MQCORE_CRASH_AT``) and at a random moment (R15: SIGKILL to its process
group); each time it restarts from its Spark checkpoints. Finally the producer
stops and an AvailableNow run drains the rest. Each sink's output must equal
the input exactly: per-key totals and counts, and for SQL the set of message ids.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from mqcore.checkpoints import CheckpointStore
from mqcore.config import MQConfig
from mqcore.producer import OutgoingMessage, Producer
from mqcore.topics import Topics

pytestmark = [pytest.mark.spark, pytest.mark.faults, pytest.mark.redis, pytest.mark.timeout(420)]

ROOT = Path(__file__).resolve().parents[2]
SINKS = ("redis", "2pc", "sql")
CUSTOMERS = [f"cust{i}" for i in range(5)]


class LiveProducer(threading.Thread):
    def __init__(self, config: MQConfig) -> None:
        super().__init__(daemon=True)
        self.producer = Producer(config)
        self.sent: list[tuple[str, str, int]] = []  # (partition:id, customer, amount)
        self.halt = threading.Event()
        self.rng = random.Random(7)

    def run(self) -> None:
        while not self.halt.is_set():
            batch = []
            for _ in range(4):
                customer = self.rng.choice(CUSTOMERS)
                batch.append((customer, self.rng.randint(1, 100)))
            results = self.producer.send_many(
                "orders",
                [OutgoingMessage(f'{{"customer":"{c}","amount":{a}}}', key=c) for c, a in batch],
            )
            for r, (c, a) in zip(results, batch, strict=True):
                self.sent.append((f"{r.partition}:{r.id}", c, a))
            self.halt.wait(0.05)


RUNNING: list[subprocess.Popen[bytes]] = []


def _driver(env: dict[str, str], url: str, *extra: str) -> subprocess.Popen[bytes]:
    log = Path(env["SPARK_CHECKPOINT_DIR"]).parent / f"driver-{len(RUNNING)}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.spark.driver", "--url", url, *extra],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: SIGKILL takes JVM and workers too
        )
    proc.log = log  # type: ignore[attr-defined]
    RUNNING.append(proc)
    return proc


def _tail(proc: subprocess.Popen[bytes]) -> str:
    return proc.log.read_text(errors="replace")[-3000:]  # type: ignore[attr-defined]


@pytest.fixture(autouse=True)
def _reap() -> Any:
    yield
    while RUNNING:
        proc = RUNNING.pop()
        if proc.poll() is None:
            _kill(proc)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(30)


def _completed(store: CheckpointStore) -> int:
    return sum(s["completed"] for s in store.summaries())


def _wait_for_progress(
    store: CheckpointStore, proc: subprocess.Popen[bytes], deadline_s: float
) -> None:
    before = _completed(store)
    end = time.monotonic() + deadline_s
    while time.monotonic() < end and proc.poll() is None:
        if _completed(store) > before:
            return
        time.sleep(0.2)
    _kill(proc)
    pytest.fail(f"driver made no progress (exit {proc.returncode}): {_tail(proc)}")


def test_all_sinks_exactly_once_across_driver_crashes(
    mq_config: MQConfig, redis_url: str, tmp_path: Path
) -> None:
    from mqcore.spark.sinks import SqlDatabase

    Topics(mq_config).create("orders", 2, groups=())
    store = CheckpointStore(mq_config)
    db_url = f"sqlite:///{tmp_path / 'sink.sqlite3'}"
    env = {
        **os.environ,
        "SPARK_CHECKPOINT_DIR": str(tmp_path / "cp"),
        "PIPELINE_DATABASE_URL": db_url,
        "PYTHONPATH": str(ROOT),
    }
    env.pop("MQCORE_CRASH_AT", None)
    producer = LiveProducer(mq_config)
    producer.start()
    rng = random.Random(11)
    try:
        # R16: named crash points inside the sink protocols, each after some progress.
        for point in ("2pc.after_stage", "redis.after_commit", "sql.after_db_commit"):
            proc = _driver({**env, "MQCORE_CRASH_AT": f"{point}@1"}, redis_url)
            try:
                code = proc.wait(180)
            except subprocess.TimeoutExpired:
                code = None
            assert code == -signal.SIGKILL, f"crash point {point} not reached: {_tail(proc)}"
        # R15: kill -9 at a random moment of a live run.
        proc = _driver(env, redis_url)
        _wait_for_progress(store, proc, 120)
        time.sleep(rng.uniform(0.0, 2.0))
        _kill(proc)
    finally:
        producer.halt.set()
        producer.join(10)
    drain = _driver(env, redis_url, "--available-now")
    assert drain.wait(240) == 0, _tail(drain)

    totals: dict[str, int] = Counter()
    counts: dict[str, int] = Counter()
    for _, customer, amount in producer.sent:
        totals[customer] += amount
        counts[customer] += 1
    for sink in ("redis", "2pc"):
        pid = f"order_totals.{sink}"
        out_totals = {
            k.decode(): int(v)
            for k, v in store.client.hgetall(mq_config.keys.sink_output(pid, "totals")).items()
        }
        out_counts = {
            k.decode(): int(v)
            for k, v in store.client.hgetall(mq_config.keys.sink_output(pid, "counts")).items()
        }
        assert out_counts == dict(counts), sink
        assert out_totals == dict(totals), sink
    db = SqlDatabase(db_url)
    try:
        ids = db.message_ids("order_totals.sql")
        assert len(ids) == len(set(ids))
        assert set(ids) == {m for m, _, _ in producer.sent}
        assert db.totals("order_totals.sql") == dict(totals)
    finally:
        db.close()
    # Every restart that replayed a planned-but-uncommitted batch is recorded as a restore,
    # and the pipeline groups were moved to the end (the console's lag is 0).
    summaries = {s["pipeline"]: s for s in store.summaries()}
    assert sum(s["restored"] for s in summaries.values()) >= 3
    assert all(s["in_progress"] == 0 for s in summaries.values())
    from mqcore.admin import Admin

    for sink in SINKS:
        assert Admin(mq_config).lag("orders", f"order_totals.{sink}")[0].lag == 0
