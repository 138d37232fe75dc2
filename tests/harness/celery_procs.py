"""Start real Celery worker/beat processes against the private Redis (collector tests).

Each process gets its settings from the environment (config.settings.test reads
MQ_CLUSTERS, CONSOLE_REDIS_URL, CELERY_BROKER_URL, COLLECT_INTERVAL_S...), so
nothing here touches the test process's Django settings.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent.parent


def collector_env(base_url: str, clusters: Mapping[str, str], **settings: Any) -> dict[str, str]:
    """Environment for worker/beat: clusters name -> MQ URL; console db 1, broker db 2."""
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings.test",
        MQ_CLUSTERS=json.dumps({name: {"url": url} for name, url in clusters.items()}),
        CONSOLE_REDIS_URL=f"{base_url}/1",
        CELERY_BROKER_URL=f"{base_url}/2",
        PYTHONUNBUFFERED="1",
    )
    env.update({k: str(v) for k, v in settings.items()})
    return env


def start(kind: str, env: dict[str, str], workdir: Path, *extra: str) -> subprocess.Popen[bytes]:
    """``kind`` is "worker-beat" (worker -B, solo pool), "worker" (threads) or "beat"."""
    base = [sys.executable, "-m", "celery", "-A", "config"]
    tag = f"{kind}-{time.monotonic_ns()}"
    if kind == "beat":
        args = [*base, "beat", f"--schedule={workdir / tag}.db", "--loglevel=WARNING"]
    elif kind == "worker-beat":
        args = [*base, "worker", "-B", "--pool=solo", f"--schedule={workdir / tag}.db"]
        args += [
            "--loglevel=WARNING",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ]
    else:
        args = [*base, "worker", "--pool=threads", "--concurrency=4", "--loglevel=WARNING"]
        args += ["--without-gossip", "--without-mingle", "--without-heartbeat", f"-n{tag}@%h"]
    with (workdir / f"{tag}.log").open("wb") as log:  # the child keeps its own descriptor
        return subprocess.Popen([*args, *extra], cwd=ROOT, env=env, stdout=log, stderr=log)


def stop(proc: subprocess.Popen[bytes], *, kill: bool = False) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def wait_for(predicate: Callable[[], Any], *, timeout: float = 20.0, what: str = "") -> Any:
    """Poll ``predicate`` until it returns something truthy (with a deadline, no long sleeps)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or predicate}")
        time.sleep(0.1)
