"""Drill 11: a Spark pipeline killed: the checkpoint age alert, none for its group's lag.

The ``order_totals`` pipeline (redis sink) runs in its own Spark driver process, orders
flowing in. Its group holds no lease by design (the sink commits the group's position), so
when the driver is killed (SIGKILL to its process group) the group's lag grows with nobody
"alive": the group goes STALL then STOP, and the ``status`` rule stays quiet for a pipeline
group; the pipeline's checkpoint rules judge it. ``checkpoint_age`` opens once the last
completed checkpoint is older than its limit (compressed here to 4 s; 900 s by default).
A driver started again restores from its Spark checkpoint and the alert resolves.

No pass runs while the first driver starts (the JVM takes tens of seconds on two cores):
until its first checkpoint the console cannot know the group is a pipeline's, and the
drills' status hold (2 s against 300 s by default) would alert on a start that slow.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from mqcore.checkpoints import CheckpointStore
from mqcore.topics import Topics
from tests.drills.harness import ROOT, Drill, wait_for
from tests.spark.conftest import JVM_OPTIONS

pytestmark = [
    pytest.mark.redis,
    pytest.mark.drills,
    pytest.mark.spark,
    pytest.mark.django_db,
    pytest.mark.timeout(300),
]

PIPELINE = "order_totals.redis"
ALERT = f"checkpoint_age:{PIPELINE}"


def driver(drill: Drill, workdir: Path) -> subprocess.Popen[bytes]:
    """The pipeline's Spark driver, in a process group of its own (killed whole)."""
    env = {
        **os.environ,
        "SPARK_CHECKPOINT_DIR": str(workdir / "checkpoints"),
        "JDK_JAVA_OPTIONS": JVM_OPTIONS,
        "PYTHONPATH": str(ROOT),
    }
    args = [sys.executable, "-m", "tests.spark.driver", "--url", drill.redis_url]
    with (workdir / "driver.log").open("ab") as log:
        return subprocess.Popen(
            [*args, "--sinks", "redis", "--max-records", "50"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )


def kill(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def checkpoint_age(drill: Drill) -> float | None:
    return drill.metric("redis_streaming_mq_console_checkpoint_age_seconds", pipeline=PIPELINE)


def test_killed_pipeline_raises_checkpoint_age_only(
    drill: Drill, settings: object, tmp_path: Path
) -> None:
    settings.ALERT_CHECKPOINT_AGE_S = 4  # type: ignore[attr-defined]
    Topics(drill.config).create("orders", 2, groups=())
    drill.producer("orders", rate=10)
    proc = driver(drill, tmp_path)
    try:
        store = CheckpointStore(drill.config)
        wait_for(
            lambda: (store.committed_batch(PIPELINE, "redis") or 0) >= 1,
            timeout=180,
            what="the pipeline's first checkpoints",
        )
        drill.warm_up(3)
        # a healthy pipeline's group reads OK: on a loaded machine a slow micro-batch can
        # show its lag growing (WARN) for a few passes first
        drill.until("the group OK", lambda: drill.status("orders", PIPELINE) == "OK", max_passes=20)
        age = checkpoint_age(drill)
        assert age is not None
        assert age < 2

        kill(proc)
        drill.inject()
        passes = drill.until("checkpoint age", lambda: ALERT in drill.opened(), max_passes=10)
        assert passes <= 7  # older than 4 s, seen on the next pass
        drill.detected("11 pipeline killed", "checkpoint_age alert", passes, default_s=900 + 10)
        assert drill.metric("opsdash_alerts_open", rule="checkpoint_age", severity="warning") == 1
        seen = drill.seen("orders", PIPELINE)
        assert {"STALL", "STOP"} & set(seen), seen  # its lag grows, nobody holds it ...
        # ... and still no status alert: the pipeline's checkpoint rules judge it

        proc = driver(drill, tmp_path)
        drill.until("resolved", lambda: ALERT in drill.resolved(), max_passes=120)
    finally:
        kill(proc)
    drill.assert_only_alerts(ALERT)
