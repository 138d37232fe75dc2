"""The CLI contract: fields of --json output, human tables, exit code 2 + one stderr line."""

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

from mqcore.cli import main
from mqcore.config import MQConfig
from tests.integration.raw_java import create_topic, java_dlq_letter

pytestmark = pytest.mark.redis
ROOT = Path(__file__).resolve().parents[2]


def run(capsys: pytest.CaptureFixture[str], url: str, *args: str) -> tuple[int, str, str]:
    code = main(["--redis-url", url, *args])
    out, err = capsys.readouterr()
    return code, out, err


def js(capsys: pytest.CaptureFixture[str], url: str, *args: str) -> object:
    code, out, err = run(capsys, url, "--json", *args)
    assert code == 0, err
    return json.loads(out)


def test_topic_produce_lag_pending_leases(
    capsys: pytest.CaptureFixture[str], redis_url: str
) -> None:
    assert js(capsys, redis_url, "topic", "create", "orders", "--partitions", "3")
    sent = js(capsys, redis_url, "produce", "orders", "--payload", "hi", "--key", "k1",
              "--header", "a=b")  # fmt: skip
    assert isinstance(sent, dict)
    assert set(sent) >= {"topic", "partition", "id"}
    assert sent["partition"] == 0  # Java hash of "k1" mod 3
    listed = js(capsys, redis_url, "topic", "list")
    assert isinstance(listed, list)
    assert {k: listed[0][k] for k in ("topic", "partitions", "length", "dlq_length")} == {
        "topic": "orders", "partitions": 3, "length": 1, "dlq_length": 0,
    }  # fmt: skip
    lag = js(capsys, redis_url, "lag", "orders", "--group", "default-group")
    assert isinstance(lag, dict)
    group = lag["groups"][0]
    assert {"group", "lag", "lag_ms", "pending", "lag_exact", "partitions"} <= set(group)
    assert group["lag"] == 1
    assert {"partition", "last_delivered_id", "lag", "lag_ms", "pending", "lag_exact"} <= set(
        group["partitions"][0]
    )
    r = redis.Redis.from_url(redis_url)
    r.xreadgroup(
        "default-group", "c1", {MQConfig.from_url(redis_url).keys.partition("orders", 0): ">"}
    )
    pending = js(
        capsys, redis_url, "pending", "orders", "--group", "default-group", "--sort", "count"
    )
    assert isinstance(pending, dict)
    assert pending["scanned"] == 1
    assert set(pending["entries"][0]) >= {"partition", "id", "consumer", "idle_ms", "deliveries"}
    leases = js(capsys, redis_url, "leases", "orders")
    assert isinstance(leases, list)
    assert set(leases[0]) >= {"group", "partition", "owner", "ttl_ms", "epoch"}
    code, out, _ = run(capsys, redis_url, "lag", "orders")
    assert code == 0
    assert "LAG_EXACT" in out.splitlines()[0]
    r.close()


def test_dlq_commands(capsys: pytest.CaptureFixture[str], redis_url: str, r: redis.Redis) -> None:
    keys = MQConfig.from_url(redis_url).keys
    create_topic(r, keys, "orders", 2)
    letter = java_dlq_letter(r, keys, "orders", 1, b"\xff<script>", key="k")
    listed = js(capsys, redis_url, "dlq", "list", "orders", "--limit", "5")
    assert isinstance(listed, dict)
    row = listed["letters"][0]
    assert set(row) >= {"id", "partition", "original_id", "retry_count", "failed_at", "key",
                        "payload", "headers"}  # fmt: skip
    assert (row["id"], row["partition"], row["payload_bytes_hex"]) == (
        letter,
        1,
        "ff3c7363726970743e",
    )
    replay = js(capsys, redis_url, "dlq", "replay", "orders", letter)
    assert replay == {
        **replay,
        "replayed": True,
        "topic": "orders",
        "partition": 1,
        "reason": "replayed",
    }
    again = js(capsys, redis_url, "dlq", "replay", "orders", letter)
    assert isinstance(again, dict)
    assert (again["replayed"], again["reason"]) == (False, "already-replayed")
    got = js(capsys, redis_url, "dlq", "get", "orders", letter)
    assert isinstance(got, dict)
    assert len(got["replays"]) == 1
    code, _, err = run(capsys, redis_url, "dlq", "purge", "orders")
    assert code == 2
    assert "--yes" in err
    assert js(capsys, redis_url, "dlq", "purge", "orders", "--yes") == {
        "purged": 1,
        "topic": "orders",
    }


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["lag", "ghost"], "unknown topic"),
        (["dlq", "replay", "orders", "nope"], "invalid stream id"),
        (["dlq", "get", "orders", "1-0"], "no dead letter"),
        (["pending", "orders"], "--group"),
        (["pending", "orders", "--group", "g", "--sort", "age"], "invalid choice"),
        (["topic", "create", "bad:name"], "invalid topic name"),
        (["produce", "orders", "--payload", "x", "--header", "novalue"], "NAME=VALUE"),
        (["produce", "orders", "--payload", "x", "--partition", "9"], "partition"),
        (["frobnicate"], "invalid choice"),
        ([], "required"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str], redis_url: str, r: redis.Redis, args: list[str], needle: str
) -> None:
    create_topic(r, MQConfig.from_url(redis_url).keys, "orders", 2)
    code, out, err = run(capsys, redis_url, *args)
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert needle in err
    assert "Traceback" not in err


def test_module_entry_point_and_consume_stops_on_sigterm(redis_url: str, r: redis.Redis) -> None:
    keys = MQConfig.from_url(redis_url).keys
    create_topic(r, keys, "orders", 1, groups=("g",))
    env = {**os.environ, "MQ_REDIS_URL": redis_url}
    proc = subprocess.run(
        [sys.executable, "-m", "mqcore", "--json", "lag", "ghost"],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1
    consumer = subprocess.Popen(
        [sys.executable, "-m", "mqcore", "--json", "consume", "orders", "--group", "g",
         "--name", "demo", "--poison-marker", "POISON"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT,
    )  # fmt: skip
    try:
        pipe = r.pipeline()
        pipe.xadd(keys.partition("orders", 0), {"payload": "ok", "headers": "{}"})
        pipe.xadd(keys.partition("orders", 0), {"payload": "POISON", "headers": "{}"})
        pipe.execute()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and r.xlen(keys.dlq("orders")) < 1:
            time.sleep(0.05)
        assert r.xlen(keys.dlq("orders")) == 1
        consumer.send_signal(signal.SIGTERM)
        out, err = consumer.communicate(timeout=30)
    finally:
        if consumer.poll() is None:
            consumer.kill()
            consumer.wait()
    assert consumer.returncode == 0, err
    stats = json.loads(out.strip().splitlines()[-1])
    assert stats["consumer"] == "demo"
    assert stats["dead"] == 1
    assert stats["acked"] >= 1
