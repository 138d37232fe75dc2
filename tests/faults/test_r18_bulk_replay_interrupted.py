"""R18: a bulk replay interrupted by a worker crash resumes without replaying any letter
twice, and its progress is exact."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import redis

from dashboard.clusters import dead_letters
from dashboard.models import ReplayJob, ReplayJobStatus
from dashboard.services.replay_runner import replay_job_run
from tests.faults.checker import wait_for
from tests.integration.dlq_support import add_letters, make_topic, role_user

pytestmark = [pytest.mark.faults, pytest.mark.redis]

ROOT = Path(__file__).resolve().parents[2]
LETTERS = 2000
RATE = 400  # letters/s: chunks of 400, one per second, so the kill lands mid-job


def replayed_from(r: redis.Redis, cfg, topic: str, partitions: int) -> Counter[str]:
    """How many partition entries each letter produced (by the x-replayed-from-dlq header)."""
    seen: Counter[str] = Counter()
    for p in range(partitions):
        for _, fields in r.xrange(cfg.keys.partition(topic, p)):
            headers = json.loads(fields[b"headers"])
            seen[headers.get("x-replayed-from-dlq", "?")] += 1
    return seen


def job_row(db: Path) -> tuple[str, int, int, int, int]:
    with sqlite3.connect(db) as conn:
        row = conn.execute(
            "SELECT status, cursor, replayed, skipped, failed FROM dashboard_replayjob"
        ).fetchone()
    return tuple(row) if row else ("none", 0, 0, 0, 0)


def start_worker(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:  # the child keeps its own descriptor
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "worker",
                "--pool",
                "solo",
                "--concurrency",
                "1",
                "--loglevel",
                "INFO",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                "-n",
                f"r18-{log.stem}@%h",
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def test_worker_killed_mid_job_resumes_exactly(r, mq_config, env, console_db, tmp_path) -> None:
    make_topic(mq_config, "orders", 2)
    ids = add_letters(r, mq_config, "orders", LETTERS)
    db = console_db
    worker = start_worker(env, tmp_path / "worker-a.log")
    try:
        subprocess.run(
            [sys.executable, "-m", "tests.faults.r18_helper", str(RATE)],
            cwd=ROOT, env=env, check=True, capture_output=True,
        )  # fmt: skip
        wait_for(lambda: job_row(db)[1] >= RATE, 60, "the first chunk")
        os.kill(worker.pid, signal.SIGKILL)  # our own worker (solo pool: the task runs in it)
        worker.wait(timeout=10)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait(timeout=10)
    status, cursor, *_ = job_row(db)
    assert status == ReplayJobStatus.RUNNING
    assert 0 < cursor < LETTERS
    worker = start_worker(env, tmp_path / "worker-b.log")
    try:
        wait_for(lambda: job_row(db)[0] == "completed", 90, "the resumed job to finish")
    finally:
        worker.terminate()
        worker.wait(timeout=20)
    assert job_row(db) == ("completed", LETTERS, LETTERS, 0, 0)
    produced = replayed_from(r, mq_config, "orders", 2)
    assert sum(produced.values()) == LETTERS
    assert set(produced) == set(ids)
    assert max(produced.values()) == 1
    assert r.hlen(mq_config.keys.dlq_replays("orders")) == LETTERS


@pytest.mark.django_db
@pytest.mark.parametrize("force", [False, True])
def test_crash_inside_a_chunk_is_counted_exactly(r, mq_config, force: bool) -> None:
    """Replays done by the dead runner after its last progress commit are not sent again."""
    make_topic(mq_config, "orders", 2)
    ids = add_letters(r, mq_config, "orders", 250)
    dead_letters("default").replay(
        "orders", ids[-1], by="someone-else"
    )  # replayed before the job: skipped (or forced again)
    user = role_user("adm", "Admin")
    job = ReplayJob.objects.create(
        cluster="default",
        topic="orders",
        created_by=user,
        reason="R18",
        frozen_ids="\n".join(ids),
        frozen_hash="0" * 64,
        total=len(ids),
        first_id=ids[0],
        last_id=ids[-1],
        force=force,
        status=ReplayJobStatus.RUNNING,  # the dead runner had started
    )
    # The dead runner replayed 130 letters (first chunk partly) and committed nothing.
    dead_letters("default").replay_many(
        "orders", ids[:130], by=f"adm ({job.runner_tag})", force=force
    )
    done = replay_job_run(job_id=str(job.pk))
    assert done is not None
    assert done.status == ReplayJobStatus.COMPLETED
    assert done.cursor == 250
    if force:
        assert (done.replayed, done.skipped, done.failed) == (250, 0, 0)
    else:
        assert (done.replayed, done.skipped, done.failed) == (249, 1, 0)
    produced = replayed_from(r, mq_config, "orders", 2)
    assert produced[ids[0]] == 1
    assert produced[ids[129]] == 1
    assert produced[ids[-1]] == (2 if force else 1)
    assert sum(produced.values()) == (251 if force else 250)
