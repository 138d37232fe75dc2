"""Collectors under a real Celery worker + beat against real Redis (short interval: 1 s)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import redis

from dashboard.clusters import console_keys, console_store
from dashboard.store import decode_points
from mqcore.config import MQConfig
from mqcore.producer import Producer
from mqcore.topics import Topics
from scripts.embedded import EmbeddedRedis, find_free_port
from tests.harness.celery_procs import collector_env, start, stop, wait_for

pytestmark = [pytest.mark.redis]


def _base(server: EmbeddedRedis) -> str:
    return f"redis://{server.host}:{server.port}"


def _health(name: str) -> dict:
    return console_store().collector_health_get().get(name) or {}


def _statuses(cluster: str, topic: str) -> set[str]:
    snap = console_store().snapshot_get(cluster)
    for t in snap.topics if snap is not None else ():
        if t.topic == topic:
            return {p.status.value for g in t.groups for p in g.partitions}
    return set()


def test_samples_on_schedule_retention_and_failing_cluster_isolated(
    redis_server: EmbeddedRedis, mq_config: MQConfig, console_r: redis.Redis, tmp_path: Path
) -> None:
    Topics(mq_config).create("orders", 2)
    producer = Producer(mq_config)
    for i in range(6):
        producer.send("orders", f"m{i}", key=str(i))
    dead = f"redis://127.0.0.1:{find_free_port()}/0"
    env = collector_env(
        _base(redis_server),
        {"main": f"{_base(redis_server)}/0", "dead": dead},
        COLLECT_INTERVAL_S=1,
        SERIES_RAW_RETENTION_S=3,
        ALERT_COLLECTOR_FAILURES=2,
    )
    proc = start("worker-beat", env, tmp_path)
    try:
        wait_for(lambda: _health("main").get("runs", 0) >= 7, timeout=30, what="7 passes")
        raw = console_r.get(console_keys().series("main", "raw", "length", "orders"))
        points = decode_points(raw)
        stamps = [t for t, _ in points]
        assert all(v == 6.0 for _, v in points)
        assert stamps == sorted(set(stamps)), "one sample per slot"
        # retention 3 s at 1 s: at most 4 + slack 2 points stay stored, none far older
        assert 2 <= len(points) <= 6
        assert stamps[0] >= (time.time() - 3 - 4) * 1000
        recent = console_store().series_get("main", "length", "orders", since_ms=stamps[-2])
        assert recent == points[-2:]
        snap = console_store().snapshot_get("main")
        assert snap is not None
        assert snap.topics[0].length == 6
        dead_health = _health("dead")
        assert dead_health["ok"] is False
        assert dead_health["errors"] >= 2
        assert "Connection" in dead_health["error"]
        assert _health("main")["ok"] is True
        alerts = wait_for(lambda: console_store().alerts_list(["dead"]), what="collector alert")
        assert alerts[0]["rule"] == "collector"
        assert console_store().alerts_list(["main"]) == []
    finally:
        stop(proc)


def test_consumer_stop_turns_partitions_stop_then_ok_on_resume(
    redis_server: EmbeddedRedis, mq_config: MQConfig, tmp_path: Path
) -> None:
    from mqcore.consumer import Consumer, ConsumerOptions

    Topics(mq_config).create("jobs", 2)
    producer = Producer(mq_config)
    env = collector_env(
        _base(redis_server),
        {"main": f"{_base(redis_server)}/0"},
        COLLECT_INTERVAL_S=1,
        STATUS_WINDOW_SAMPLES=2,
        STATUS_STOP_AFTER_S=2,
    )
    options = ConsumerOptions(
        group="default-group", lease_ttl_ms=2000, renew_interval_ms=500,
        rebalance_interval_ms=500, block_ms=200,
    )  # fmt: skip
    proc = start("worker-beat", env, tmp_path)
    consumer = Consumer(mq_config, "jobs", lambda m: None, options)
    try:
        consumer.start()
        for i in range(4):
            producer.send("jobs", f"a{i}", partition=i % 2)
        wait_for(lambda: _statuses("main", "jobs") == {"OK"}, what="OK while consuming")
        consumer.stop()
        for i in range(4):
            producer.send("jobs", f"b{i}", partition=i % 2)
        wait_for(lambda: _statuses("main", "jobs") == {"STOP"}, timeout=30, what="STOP")
        snap = console_store().snapshot_get("main")
        assert snap is not None
        assert "no consumer activity" in snap.topics[0].status_reason
        resumed = Consumer(mq_config, "jobs", lambda m: None, options)
        resumed.start()
        try:
            wait_for(lambda: _statuses("main", "jobs") == {"OK"}, timeout=30, what="OK again")
        finally:
            resumed.stop()
        events = console_store().lease_timeline_get("main", "jobs")
        kinds = {e["event"] for e in events}
        assert "acquired" in kinds
        assert kinds & {"released", "expired"}
    finally:
        consumer.stop()
        stop(proc)
