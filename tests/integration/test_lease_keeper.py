"""A running pipeline keeps a lease on every partition for its group (what Java's
housekeeper counts as live): renewed within the TTL, released on a clean stop, expiring when
the process dies, its frontier seeded in the deployment's encoding (mqcore.lease_keeper)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from mqcore.codec import kryo
from mqcore.config import MQConfig
from mqcore.lease_keeper import LeaseKeeper
from mqcore.topics import Topics
from tests.integration.raw_java import create_topic

pytestmark = pytest.mark.redis
TOPIC, PIPE = "orders", "order_totals.redis"
ROOT = Path(__file__).resolve().parents[2]


def _owners(r: redis.Redis, cfg: MQConfig, partitions: int) -> list[str | None]:
    raw = [r.get(cfg.keys.lease(TOPIC, PIPE, p)) for p in range(partitions)]
    return [v.decode() if v is not None else None for v in raw]


def test_a_pipeline_holds_every_partition_renews_and_releases_on_stop(
    r: redis.Redis, redis_url: str
) -> None:
    cfg = MQConfig.from_url(redis_url, encoding="java-kryo")
    create_topic(r, cfg.keys, TOPIC, 2, groups=(PIPE, "app"))
    r.xadd(cfg.keys.partition(TOPIC, 0), {"payload": "x"}, id="1000-0")
    r.xgroup_setid(cfg.keys.partition(TOPIC, 0), PIPE, "1000-0")
    keeper = LeaseKeeper(cfg, topic=TOPIC, group=PIPE, ttl_ms=1000)
    keeper.start()
    try:
        owners = _owners(r, cfg, 2)
        assert owners == [keeper.owner, keeper.owner]
        assert keeper.owner.startswith(f"spark-pipeline:{PIPE}:")
        assert 0 < r.pttl(cfg.keys.lease(TOPIC, PIPE, 0)) <= 1000
        # the frontier Java reads, from the first lease: the group as it stands, capped at
        # the partition's retention floor (group "app" has read nothing: 0-1)
        for p, seeded in ((0, "0-1"), (1, "0-0")):
            front = r.hgetall(cfg.keys.commit_frontier(TOPIC, p))
            assert front == {kryo.encode(PIPE): kryo.encode(seeded)}
        # another group's leases and epochs are not touched: no consumer is fenced
        assert r.get(cfg.keys.lease_epoch(TOPIC, "app", 0)) is None
        time.sleep(2.2)  # two TTLs: renewed all along
        assert _owners(r, cfg, 2) == [keeper.owner, keeper.owner]
        Topics(cfg).grow(TOPIC, 3)  # a partition added while it runs is taken too
        deadline = time.monotonic() + 5
        while _owners(r, cfg, 3)[2] is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _owners(r, cfg, 3) == [keeper.owner] * 3
    finally:
        keeper.stop()
    assert _owners(r, cfg, 3) == [None, None, None]  # a clean stop releases at once


def test_a_lease_held_by_another_is_taken_when_it_frees(r: redis.Redis, redis_url: str) -> None:
    cfg = MQConfig.from_url(redis_url)
    create_topic(r, cfg.keys, TOPIC, 1, groups=(PIPE,))
    r.set(cfg.keys.lease(TOPIC, PIPE, 0), "spark-pipeline:earlier-run", px=400)
    keeper = LeaseKeeper(cfg, topic=TOPIC, group=PIPE, ttl_ms=300)
    keeper.start()
    try:
        assert _owners(r, cfg, 1) == ["spark-pipeline:earlier-run"]
        deadline = time.monotonic() + 5
        while _owners(r, cfg, 1) != [keeper.owner] and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _owners(r, cfg, 1) == [keeper.owner]
        assert r.hgetall(cfg.keys.commit_frontier(TOPIC, 0)) == {PIPE.encode(): b"0-0"}
    finally:
        keeper.stop()


def test_the_lease_of_a_killed_pipeline_expires(r: redis.Redis, redis_url: str) -> None:
    cfg = MQConfig.from_url(redis_url)
    create_topic(r, cfg.keys, TOPIC, 1, groups=(PIPE,))
    code = (
        "import sys, time\n"
        "from mqcore.config import MQConfig\n"
        "from mqcore.lease_keeper import LeaseKeeper\n"
        f"LeaseKeeper(MQConfig.from_url({redis_url!r}), topic={TOPIC!r}, group={PIPE!r},"
        " ttl_ms=1000).start()\n"
        "print('held', flush=True)\n"
        "time.sleep(60)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, env=env) as proc:
        try:
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == b"held"
            time.sleep(1.2)  # renewed past its first TTL
            assert _owners(r, cfg, 1)[0] is not None
            os.kill(proc.pid, signal.SIGKILL)  # a crash: nothing is released
            proc.wait(5)
            assert _owners(r, cfg, 1)[0] is not None
            time.sleep(1.1)  # one TTL later it is gone
            assert _owners(r, cfg, 1) == [None]
        finally:
            if proc.poll() is None:
                proc.kill()
