"""R15 + R16: the order_totals pipeline into all three sinks survives kill -9 of the driver.

One driver process runs the redis, 2pc and sql queries together (one JVM start
per run keeps this affordable). A live producer writes orders throughout. The
driver dies at EVERY named crash point inside the sink protocols (R16: the
driver gives the sinks the crash hook of tests/spark/crash.py; ``MQCORE_CRASH_AT``
arms all points not hit yet, the first one reached kills and is logged, so each
restart covers at least one new point) and at a random
moment (R15: SIGKILL to its process group); each time it restarts from its
Spark checkpoints. Finally the producer stops and an AvailableNow run drains
the rest. Each sink's output must equal the input exactly: per-key totals and
counts, and for SQL the set of message ids. Each crashed batch must have been
committed or not exactly as its crash point says, and recorded as a restore.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
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
from mqcore.errors import InvalidArgumentError
from mqcore.producer import OutgoingMessage, Producer
from mqcore.sinkstate import SqlDatabase
from mqcore.spark.sinks import CRASH_POINTS
from mqcore.topics import Topics
from tests.spark.crash import CRASH_ENV, CRASH_LOG_ENV, crash_points

# The timeout only catches a hang: the crash test starts one Spark driver (a JVM) per crash
# point, 9-10 minutes on 2 cores shared with the suite's other worker (the same at aef9453).
pytestmark = [pytest.mark.spark, pytest.mark.faults, pytest.mark.redis, pytest.mark.timeout(1200)]

ROOT = Path(__file__).resolve().parents[2]
SINKS = ("redis", "2pc", "sql")
CUSTOMERS = [f"cust{i}" for i in range(5)]
# Did the batch reach the sink's Redis marker before the crash? (None: either way)
COMMITTED_AT_CRASH: dict[str, bool | None] = {
    "redis.before_commit": False,
    "redis.after_commit": True,
    "2pc.after_stage": None,  # normally not; a replay of a committed batch stages again
    "2pc.before_commit": False,
    "2pc.after_commit": True,
    "sql.after_stage": False,
    "sql.before_db_commit": False,
    "sql.after_db_commit": False,  # the database is, Redis follows
}
# fields per commit script: batches of 3+ customers (6+ fields) commit through the journal,
# smaller ones in one script, so both ways are crashed (a kill between a journaled commit's
# steps: tests/faults/test_commit_journal_killed.py)
COMMIT_CHUNK = "5"
SKIPPED = "skipped: already committed"
REPLAYED = "replayed: planned but not committed"


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
        command = [sys.executable, "-m", "tests.spark.driver", "--url", url]
        proc = subprocess.Popen(
            [*command, "--commit-chunk", COMMIT_CHUNK, *extra],
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


def test_crash_points_are_all_listed_and_parsed() -> None:
    source = "".join(
        p.read_text() for p in sorted((ROOT / "mqcore" / "spark" / "sinks").glob("*.py"))
    )
    assert set(re.findall(r'crash_point\("([^"]+)"', source)) == set(CRASH_POINTS)
    assert set(COMMITTED_AT_CRASH) == set(CRASH_POINTS)
    assert crash_points(" redis.after_commit@2,,2pc.after_stage ") == {
        "redis.after_commit": 2,
        "2pc.after_stage": 0,
    }
    for bad in ("redis.after_comit", "sql.after_db_commit@x", "2pc.after_stage@-1"):
        with pytest.raises(InvalidArgumentError, match=CRASH_ENV):
            crash_points(bad)


def _sql_committed(db_url: str, pipeline: str) -> int:
    db = SqlDatabase(db_url)
    try:
        batch = db.committed_batch(pipeline)
    finally:
        db.close()
    return -1 if batch is None else batch


def _check_crash_state(
    store: CheckpointStore, db_url: str, point: str, batch: int
) -> tuple[str, int, bool]:
    """The sink state right after a crash at ``point`` in ``batch``: as the point says."""
    sink = point.partition(".")[0]
    pipeline = f"order_totals.{sink}"
    marker = store.committed_batch(pipeline, sink)
    committed = marker is not None and marker >= batch
    expected = COMMITTED_AT_CRASH[point]
    assert expected is None or committed == expected, (point, batch, marker)
    if sink == "sql":
        in_db = _sql_committed(db_url, pipeline) >= batch
        assert in_db == (point == "sql.after_db_commit"), (point, batch)
        if point == "sql.after_stage":  # staged rows wait for the commit, or its replay
            db = SqlDatabase(db_url)
            try:
                assert db.staged_count(pipeline) > 0, (point, batch)
            finally:
                db.close()
    return pipeline, batch, committed


def _crash_at_every_point(
    env: dict[str, str], redis_url: str, store: CheckpointStore, db_url: str, log: Path
) -> dict[tuple[str, int], bool]:
    """Restart the driver with all points not hit yet armed until each one killed it."""
    remaining = list(CRASH_POINTS)
    crashes: dict[tuple[str, int], bool] = {}  # (pipeline, batch) -> committed at crash
    seen = 0
    while remaining:
        armed = ",".join(f"{point}@1" for point in remaining)
        proc = _driver({**env, CRASH_ENV: armed}, redis_url)
        try:
            code = proc.wait(180)
        except subprocess.TimeoutExpired:
            code = None
        assert code == -signal.SIGKILL, f"no crash point of {armed} reached: {_tail(proc)}"
        lines = log.read_text().splitlines() if log.exists() else []
        fired = {(p, int(b)) for p, _, b in (line.partition("@") for line in lines[seen:])}
        seen = len(lines)
        assert fired, f"killed without a logged crash point: {_tail(proc)}"
        for point, batch in sorted(fired):
            assert point in remaining, (point, armed)
            pipeline, batch, committed = _check_crash_state(store, db_url, point, batch)
            crashes[pipeline, batch] = crashes.get((pipeline, batch), False) or committed
        remaining = [p for p in remaining if p not in {p for p, _ in fired}]
    return crashes


def test_all_sinks_exactly_once_across_driver_crashes(
    mq_config: MQConfig, redis_url: str, tmp_path: Path
) -> None:
    Topics(mq_config).create("orders", 2, groups=())
    store = CheckpointStore(mq_config)
    db_url = f"sqlite:///{tmp_path / 'sink.sqlite3'}"
    crash_log = tmp_path / "crashes.log"
    env = {
        **os.environ,
        "SPARK_CHECKPOINT_DIR": str(tmp_path / "cp"),
        "PIPELINE_DATABASE_URL": db_url,
        "PYTHONPATH": str(ROOT),
        CRASH_LOG_ENV: str(crash_log),
    }
    env.pop(CRASH_ENV, None)
    producer = LiveProducer(mq_config)
    producer.start()
    rng = random.Random(11)
    try:
        # R16: every named crash point inside the sink protocols, after some progress.
        crashes = _crash_at_every_point(env, redis_url, store, db_url, crash_log)
        # R15: kill -9 at a random moment of a live run.
        proc = _driver(env, redis_url)
        _wait_for_progress(store, proc, 120)
        time.sleep(rng.uniform(0.0, 2.0))
        _kill(proc)
    finally:
        producer.halt.set()
        producer.join(10)
    drain = _driver(env, redis_url, "--available-now", "--max-records", "100000")  # one batch
    assert drain.wait(240) == 0, _tail(drain)

    assert_exact(mq_config, store, db_url, producer.sent)
    # Every crashed batch was replayed by a later run and recorded as a restore: skipped
    # when its commit had happened, otherwise replayed (or skipped, if that replay
    # committed and died before Spark's commit log). Groups end at the end (lag 0).
    for (pipeline, batch), committed in sorted(crashes.items()):
        record = store.get(pipeline, batch)
        assert record is not None, (pipeline, batch)
        assert record["status"] == "completed", record
        assert record["sink_committed"], record
        assert record["restored"], record
        outcomes = (SKIPPED,) if committed else (REPLAYED, SKIPPED)
        assert record["restore_outcome"].startswith(outcomes), record
    summaries = {s["pipeline"]: s for s in store.summaries()}
    assert sum(s["restored"] for s in summaries.values()) >= len(crashes)
    assert all(s["in_progress"] == 0 for s in summaries.values())


def assert_exact(
    mq_config: MQConfig, store: CheckpointStore, db_url: str, sent: list[tuple[str, str, int]]
) -> None:
    """Every sink's output equals the input: per-key totals and counts, the SQL sink's
    message ids, and every pipeline group at the end of the topic (lag 0)."""
    totals: dict[str, int] = Counter()
    counts: dict[str, int] = Counter()
    for _, customer, amount in sent:
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
        assert set(ids) == {m for m, _, _ in sent}
        assert db.totals("order_totals.sql") == dict(totals)
    finally:
        db.close()
    from mqcore.admin import Admin

    for sink in SINKS:
        assert all(row.lag == 0 for row in Admin(mq_config).lag("orders", f"order_totals.{sink}"))
