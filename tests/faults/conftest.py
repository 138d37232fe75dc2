"""Fixtures shared by the fault tests: those that run console code in subprocesses (R18,
R19), and a master with its replica in sync (R20's failover made visible, replica reads)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from scripts.embedded import EmbeddedRedis
from tests.faults.checker import ROOT
from tests.harness.celery_procs import wait_for


@pytest.fixture
def env(redis_server, redis_url, tmp_path) -> dict[str, str]:
    """The environment of a console subprocess: the private Redis, its own SQLite file."""
    base = f"redis://{redis_server.host}:{redis_server.port}"
    redis.Redis.from_url(f"{base}/3").flushdb()
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'console.db'}",
        "MQ_REDIS_URL": f"{base}/0",
        "CONSOLE_REDIS_URL": f"{base}/1",
        "CELERY_BROKER_URL": f"{base}/3",
        "OPSDASH_REPLAY_LEASE_S": "2",
        "PYTHONPATH": str(ROOT),
    }


@pytest.fixture
def console_db(env: dict[str, str], tmp_path: Path) -> Path:
    """The SQLite file of ``env``, migrated."""
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True
    )
    return tmp_path / "console.db"


@pytest.fixture
def master_replica(tmp_path: Path) -> Iterator[tuple[EmbeddedRedis, EmbeddedRedis]]:
    """A redis-server master and its replica, the replica in sync."""
    master = EmbeddedRedis(tmp_path / "master").start()
    replica = EmbeddedRedis(
        tmp_path / "replica", extra_args=["--replicaof", master.host, str(master.port)]
    ).start()
    try:
        with redis.Redis(host=replica.host, port=replica.port) as client:
            wait_for(
                lambda: client.info("replication").get("master_link_status") == "up",
                timeout=10,
                what="the replica in sync",
            )
        yield master, replica
    finally:
        replica.stop()
        master.stop()
