"""R17: two beat processes and a killed worker still give one sample per (cluster, slot)."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis

from dashboard.clusters import console_keys, console_store
from dashboard.store import decode_points
from mqcore.config import MQConfig
from mqcore.producer import Producer
from mqcore.topics import Topics
from scripts.embedded import EmbeddedRedis
from tests.harness.celery_procs import collector_env, start, stop, wait_for

pytestmark = [pytest.mark.redis, pytest.mark.faults]


def test_two_beats_one_sample_per_slot_and_killed_worker_recovers(
    redis_server: EmbeddedRedis, mq_config: MQConfig, console_r: redis.Redis, tmp_path: Path
) -> None:
    Topics(mq_config).create("orders", 2)
    Producer(mq_config).send("orders", "x", key="k")
    base = f"redis://{redis_server.host}:{redis_server.port}"
    env = collector_env(base, {"main": f"{base}/0"}, COLLECT_INTERVAL_S=1)
    broker = redis.Redis.from_url(f"{base}/2")
    beats = [start("beat", env, tmp_path), start("beat", env, tmp_path)]
    worker = start("worker", env, tmp_path)
    try:
        health = console_store().collector_health_get
        wait_for(lambda: (health().get("main") or {}).get("runs", 0) >= 4,
                 timeout=30, what="4 passes")  # fmt: skip
        stop(worker, kill=True)  # kill -9, possibly mid-pass
        broker.delete("celery")  # tasks queued while no worker ran are moot (they expire anyway)
        runs_at_kill = console_store().collector_health_get()["main"]["runs"]
        worker = start("worker", env, tmp_path)
        wait_for(lambda: console_store().collector_health_get()["main"]["runs"] >= runs_at_kill + 3,
                 timeout=30, what="passes after restart")  # fmt: skip
    finally:
        for proc in [*beats, worker]:
            stop(proc)
        broker.close()
    key = console_keys().series("main", "raw", "length", "orders")
    stamps = [t for t, _ in decode_points(console_r.get(key))]
    assert len(stamps) == len(set(stamps)), "two beats must not give two samples in one slot"
    health = console_store().collector_health_get()["main"]
    assert health["ok"] is True
    assert len(stamps) == health["runs"]  # every pass that ran stored exactly one sample
    snap = console_store().snapshot_get("main")
    assert snap is not None
    assert snap.topics[0].length == 1
