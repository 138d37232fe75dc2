"""``mqcore health`` and ``mqcore topic partitions`` on a real redis-server: the --json
contract, exit 1 when Redis can lose messages (an evicting policy, memory near maxmemory),
exit 2 on bad input, and keys or slow-log arguments with control characters printed as
data (no terminal escape reaches the terminal)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import redis

from mqcore.cli import main
from mqcore.config import MQConfig
from mqcore.topics import Topics

pytestmark = pytest.mark.redis

ESC_KEY = "evil\x1b]0;pwned\x07\x1b[2J\u202ekey"


def run(capsys: pytest.CaptureFixture[str], url: str, *args: str) -> tuple[int, str, str]:
    code = main(["--redis-url", url, *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def restore(r: redis.Redis) -> Iterator[None]:
    """Whatever a test sets on the shared redis-server goes back afterwards."""
    try:
        yield
    finally:
        r.config_set("maxmemory-policy", "noeviction")
        r.config_set("maxmemory", 0)
        r.config_set("slowlog-log-slower-than", 10000)
        r.slowlog_reset()


def test_health_ok_json_shape_and_human_block(
    capsys: pytest.CaptureFixture[str], redis_url: str, r: redis.Redis, restore: None
) -> None:
    r.config_set("maxmemory-policy", "noeviction")
    r.slowlog_reset()
    code, out, err = run(capsys, redis_url, "--json", "health")
    assert code == 0, err
    h = json.loads(out)
    assert set(h) >= {
        "version", "role", "used_memory", "used_memory_peak", "maxmemory", "memory_share",
        "fragmentation", "maxmemory_policy", "evicting_policy", "evicted_keys", "aof_enabled",
        "appendfsync", "rdb_last_save_ok", "connected_clients", "blocked_clients",
        "ops_per_s", "slowlog", "risks",
    }  # fmt: skip
    assert (h["maxmemory_policy"], h["evicting_policy"], h["risks"]) == ("noeviction", False, [])
    assert h["used_memory"] > 0
    code, out, _ = run(capsys, redis_url, "health")
    assert code == 0
    assert "memory:" in out
    assert "eviction:    noeviction" in out
    assert "persistence: AOF" in out
    assert "WARNING" not in out


def test_health_evicting_policy_exits_1_and_slowlog_is_data(
    capsys: pytest.CaptureFixture[str], redis_url: str, r: redis.Redis, restore: None
) -> None:
    r.config_set("maxmemory-policy", "allkeys-lru")
    r.config_set("slowlog-log-slower-than", 0)
    r.set(ESC_KEY, "x")
    code, out, _ = run(capsys, redis_url, "health")
    assert code == 1
    assert "WARNING: maxmemory-policy is allkeys-lru" in out
    assert "slow log (newest" in out
    assert not {"\x1b", "\x07", "\u202e"} & set(out)
    assert "evil\\x1b]0;pwned\\x07" in out  # the slow command's key, shown as escapes
    code, out, _ = run(capsys, redis_url, "--json", "health")
    assert code == 1
    h = json.loads(out)
    assert (h["evicting_policy"], h["risks"]) == (True, ["eviction"])
    assert any(e["keys"] == [ESC_KEY] for e in h["slowlog"])  # JSON keeps the data


def test_health_memory_near_maxmemory_exits_1(
    capsys: pytest.CaptureFixture[str], redis_url: str, r: redis.Redis, restore: None
) -> None:
    used = int(r.info("memory")["used_memory"])
    r.config_set("maxmemory", int(used * 1.02))  # noeviction: reads go on, writes would fail
    code, out, err = run(capsys, redis_url, "--json", "health")
    r.config_set("maxmemory", 0)
    assert code == 1, err
    h = json.loads(out)
    assert h["memory_share"] >= 0.9
    assert h["risks"] == ["memory"]


def fill(r: redis.Redis, cfg: MQConfig) -> None:
    """Partition 0 is hot (60 entries, mostly key ESC_KEY); 1 and 2 hold 5 entries each."""
    pipe = r.pipeline(transaction=False)
    for i in range(60):
        key = ESC_KEY if i % 4 else f"k{i}"
        pipe.xadd(cfg.keys.partition("orders", 0), {"payload": "x" * 50, "key": key})
    for p in (1, 2):
        for i in range(5):
            pipe.xadd(cfg.keys.partition("orders", p), {"payload": "x", "key": f"k{i}"})
    pipe.execute()


def test_topic_partitions_json_skew_and_hot_keys(
    capsys: pytest.CaptureFixture[str], redis_url: str, r: redis.Redis
) -> None:
    cfg = MQConfig.from_url(redis_url)
    Topics(cfg).create("orders", 4)
    fill(r, cfg)
    code, out, err = run(capsys, redis_url, "--json", "topic", "partitions", "orders",
                         "--hot-keys", "0", "--samples", "3")  # fmt: skip
    assert code == 0, err
    d = json.loads(out)
    assert set(d) >= {"topic", "samples", "partitions", "length", "memory_bytes", "skew"}
    assert (d["topic"], d["samples"], d["length"]) == ("orders", 3, 70)
    rows = d["partitions"]
    assert [row["partition"] for row in rows] == [0, 1, 2, 3]
    assert [row["length"] for row in rows] == [60, 5, 5, 0]
    last = r.xrevrange(cfg.keys.partition("orders", 0), count=1)[0][0].decode()
    assert rows[0]["last_id"] == last
    assert rows[3]["last_id"] == "0-0"  # created, never written
    assert all(isinstance(row["memory_bytes"], int) for row in rows)
    assert rows[0]["hot_length"] is True
    skew = d["skew"]["length"]
    assert (skew["partition"], skew["level"], skew["max"]) == (0, "hot", 60)
    assert skew["ratio"] == pytest.approx(60 / 17.5)
    hot = d["hot_keys"]
    assert (hot["partition"], hot["sampled"]) == (0, 60)
    assert hot["keys"][0] == {"key": ESC_KEY, "count": 45, "share": 0.75}

    code, out, _ = run(capsys, redis_url, "topic", "partitions", "orders", "--hot-keys", "0")
    assert code == 0
    assert out.splitlines()[1].split() == ["PARTITION", "LENGTH", "LAST_ID", "MEMORY", "HOT"]
    assert "length skew: hot (max 60 on partition 0" in out
    assert "hot keys of partition 0: 60 newest entries sampled" in out
    assert not {"\x1b", "\x07", "\u202e"} & set(out)
    assert "evil\\x1b]0;pwned\\x07\\x1b[2J\\u202ekey" in out


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["topic", "partitions", "ghost"], "unknown topic"),
        (["topic", "partitions", "bad topic\x1b"], "topic"),
        (["topic", "partitions", "orders", "--hot-keys", "2"], "partitions 0..1"),
        (["topic", "partitions", "orders", "--hot-keys", "-1"], "partitions 0..1"),
        (["topic", "partitions", "orders", "--samples", "0"], "--samples"),
        (["topic", "partitions", "orders", "--samples", "51"], "--samples"),
        (["topic", "partitions", "orders", "--hot-keys", "0", "--count", "0"], "--count"),
        (["topic", "partitions", "orders", "--count", "10"], "--hot-keys"),
        (["topic", "partitions", "orders", "--samples", "x"], "invalid int"),
        (["health", "--bogus"], "unrecognized"),
    ],
)
def test_bad_input_exits_2(
    capsys: pytest.CaptureFixture[str], redis_url: str, args: list[str], needle: str
) -> None:
    Topics(MQConfig.from_url(redis_url)).create("orders", 2)
    code, out, err = run(capsys, redis_url, *args)
    assert code == 2
    assert out == ""
    assert needle in err
    assert len(err.strip().splitlines()) == 1
    assert "\x1b" not in err
