"""R21: two beats, one leader; when the leader is killed the other takes over in time.

Real processes: two ``celery beat`` and a worker on the private redis-server. The leader
holds the console store's beat lock (dashboard/beat.py); it is killed with SIGKILL (no
release: its lock must expire). The bound: the other beat holds the lock within one
collect interval (INTERVAL_S, 4 s; the lock's TTL is half of it, so the worst case is
TTL + TTL/3 = 2.7 s and a loaded machine keeps 1.3 s), and collector passes go
on. A beat stopped with SIGTERM releases the lock at once.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import redis

from dashboard.beat import BeatLock
from dashboard.clusters import console_keys, console_store
from mqcore.config import MQConfig
from mqcore.topics import Topics
from scripts.embedded import EmbeddedRedis
from tests.harness.celery_procs import collector_env, start, stop, wait_for

pytestmark = [pytest.mark.redis, pytest.mark.faults]

INTERVAL_S = 4
SLACK_S = 2.0  # a worker to run the pass the new leader sent


def test_the_other_beat_takes_over_within_one_interval(
    redis_server: EmbeddedRedis, mq_config: MQConfig, console_r: redis.Redis, tmp_path: Path
) -> None:
    Topics(mq_config).create("orders", 1)
    base = f"redis://{redis_server.host}:{redis_server.port}"
    env = collector_env(base, {"main": f"{base}/0"}, COLLECT_INTERVAL_S=INTERVAL_S)
    key = console_keys().beat_leader()

    def leader_pid() -> int | None:
        token = console_r.get(key)
        return int(token.split(b":")[1]) if token else None

    def runs() -> int:
        return int((console_store().collector_health_get().get("main") or {}).get("runs", 0))

    beats = [start("beat", env, tmp_path), start("beat", env, tmp_path)]
    worker = start("worker", env, tmp_path)
    try:
        wait_for(lambda: runs() >= 2, timeout=30, what="passes under the first leader")
        by_pid = {beat.pid: beat for beat in beats}
        leader = by_pid[leader_pid() or 0]
        follower = next(beat for beat in beats if beat is not leader)
        stop(leader, kill=True)  # SIGKILL: the lock is not released, it expires
        killed, runs_at_kill = time.monotonic(), runs()
        wait_for(lambda: leader_pid() == follower.pid, timeout=INTERVAL_S, what="the take-over")
        assert time.monotonic() - killed <= INTERVAL_S
        wait_for(
            lambda: runs() >= runs_at_kill + 2,
            timeout=2 * INTERVAL_S + SLACK_S,
            what="passes under the new leader",
        )
        stop(follower)  # SIGTERM: the lock is given up at once
        assert console_r.get(key) is None
    finally:
        for proc in [*beats, worker]:
            stop(proc)
    assert console_store().collector_health_get()["main"]["ok"] is True


def test_the_lock_is_renewed_and_released_only_by_its_holder(console_r: redis.Redis) -> None:
    key = console_keys().beat_leader()
    first, second = BeatLock(console_r, key, 60_000), BeatLock(console_r, key, 60_000)
    assert first.hold()
    assert not second.hold()  # held: SET NX refuses
    assert first.hold()  # renewed
    console_r.set(key, second.token, px=60_000)  # as if it had expired and been taken
    assert not first.hold()  # the renew script refuses: not the holder any more
    first.held = True
    first.release()  # refused as well: the lock stays with its holder
    assert console_r.get(key) == second.token.encode()
    second.held = True
    second.release()
    assert console_r.get(key) is None
