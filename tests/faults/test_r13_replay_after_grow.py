"""R13: replay after the partition count grew (4 -> 8): documented routing, original id kept.

Routing (mqcore.dlq docstring): original partition when it still exists, else the
Java hash of the key over the current count, else 0. A real consumer process
(``python -m mqcore consume``) then handles the replayed messages.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from mqcore.config import MQConfig
from mqcore.dlq import DeadLetters
from mqcore.partition import partition_for_key
from mqcore.topics import Topics
from tests.integration.raw_java import java_dlq_letter

pytestmark = [pytest.mark.faults, pytest.mark.redis]
ROOT = Path(__file__).resolve().parents[2]


def test_replay_after_grow(r: redis.Redis, mq_config: MQConfig, redis_url: str) -> None:
    keys = mq_config.keys
    topics = Topics(mq_config, r)
    topics.create("r13", 4, groups=("g",))
    letters = {
        p: java_dlq_letter(
            r, keys, "r13", p, f"from-{p}", key=f"key-{p}", original_id=f"{10 + p}-0"
        )
        for p in range(4)
    }
    topics.grow("r13", 8)
    # a letter from a partition that no longer exists (topic deleted and re-created smaller)
    orphan = java_dlq_letter(r, keys, "r13", 12, "orphan", key="order-7", original_id="99-0")
    dlq = DeadLetters(mq_config, r)
    plan = dlq.plan("r13", [*letters.values(), orphan])
    assert [p.partition for p in plan] == [0, 1, 2, 3, partition_for_key("order-7", 8)]
    results = dlq.replay_many("r13", [*letters.values(), orphan], by="r13")
    assert all(x.replayed for x in results)
    for (p, dlq_id), res in zip(letters.items(), results, strict=False):
        [(_, fields)] = r.xrange(keys.partition("r13", p), res.new_id, res.new_id)
        headers = json.loads(fields[b"headers"])
        assert headers["x-original-message-id"] == f"{10 + p}-0"
        assert headers["x-replayed-from-dlq"] == dlq_id
        assert fields[b"partitionId"] == str(p).encode()
    assert [x.reason for x in dlq.replay_many("r13", list(letters.values()))] == [
        "already-replayed"
    ] * 4

    env = {**os.environ, "MQ_REDIS_URL": redis_url}
    proc = subprocess.Popen(
        [sys.executable, "-m", "mqcore", "--json", "consume", "r13", "--group", "g", "--name", "c"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        done = False
        while time.monotonic() < deadline and not done:
            done = all(
                f[0]["consumed"] for f in (dlq.followups("r13", i) for i in letters.values())
            )
            time.sleep(0.1)
        assert done, "replayed messages were not consumed"
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert json.loads(out.strip().splitlines()[-1])["acked"] == 5
