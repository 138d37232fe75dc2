"""``mqcore group set-position``: dry run, typed confirmation, --yes, --json, exit codes."""

from __future__ import annotations

import io
import json

import pytest
import redis

from mqcore.cli import main
from mqcore.config import MQConfig
from tests.integration.raw_java import create_topic

pytestmark = pytest.mark.redis
G = "default-group"


def run(capsys: pytest.CaptureFixture[str], url: str, *args: str) -> tuple[int, str, str]:
    code = main(["--redis-url", url, *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def key(r: redis.Redis, mq_config: MQConfig) -> str:
    create_topic(r, mq_config.keys, "orders", 2)
    key = mq_config.keys.partition("orders", 0)
    for ms in (1000, 2000, 3000):
        r.xadd(key, {"payload": "x"}, id=f"{ms}-0")
    r.xreadgroup(G, "c1", {key: ">"}, count=1)
    return key


def _position(r: redis.Redis, key: str) -> tuple[bytes, int | None]:
    g = r.xinfo_groups(key)[0]
    return g["last-delivered-id"], g["lag"]


def test_dry_run_json_then_yes(
    capsys: pytest.CaptureFixture[str], redis_url: str, r: redis.Redis, key: str
) -> None:
    base = ("group", "set-position", "orders", "--group", G, "--to", "latest", "--json")
    code, out, err = run(capsys, redis_url, *base, "--dry-run")
    assert code == 0, err
    plan = json.loads(out)
    assert plan["applied"] is False
    assert {
        "topic",
        "group",
        "target",
        "moves",
        "skipped",
        "redelivered",
        "direction",
        "note",
    } <= set(plan)
    assert plan["target"] == {"kind": "latest", "value": None}
    move = plan["moves"][0]
    want = {"partition": 0, "current_id": "1000-0", "lag_before": 2, "lag_after": 0,
            "skipped": 2, "pending": 1}  # fmt: skip
    assert {k: move[k] for k in want} == want
    assert _position(r, key) == (b"1000-0", 2)
    code, out, err = run(capsys, redis_url, *base, "--partition", "0", "--yes")
    assert code == 0, err
    done = json.loads(out)
    assert done["applied"] is True
    assert done["direction"] == "skip"
    assert _position(r, key) == (b"3000-0", 0)
    code, out, _ = run(capsys, redis_url, "group", "set-position", "orders", "--group", G,
                       "--to", "time:1970-01-01T00:00:02Z", "--dry-run")  # fmt: skip
    assert code == 0
    assert "REDELIVERED" in out
    assert "dry run" in out.splitlines()[0]


def test_confirmation_on_a_terminal_only(
    capsys: pytest.CaptureFixture[str],
    redis_url: str,
    r: redis.Redis,
    key: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    args = ("group", "set-position", "orders", "--group", G, "--to", "earliest", "--partition", "0")
    code, _, err = run(capsys, redis_url, *args)  # pytest's stdin is not a terminal
    assert code == 2
    assert "not a terminal" in err
    assert len(err.strip().splitlines()) == 1
    assert _position(r, key) == (b"1000-0", 2)

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr("sys.stdin", Tty("wrong-name\n"))
    code, out, err = run(capsys, redis_url, *args)
    assert code == 2
    assert "did not match" in err
    assert "dry run" in out  # the plan was shown first
    assert _position(r, key) == (b"1000-0", 2)
    monkeypatch.setattr("sys.stdin", Tty(f"{G}\n"))
    code, out, err = run(capsys, redis_url, *args)
    assert code == 0, err
    assert "moved" in out
    assert _position(r, key) == (b"0-0", 3)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--group", "nope", "--to", "latest"), "does not exist"),
        (("--group", G, "--to", "id:9-x"), "invalid stream id"),
        (("--group", G, "--to", "time:soon"), "invalid time"),
        (("--group", G, "--to", "id:99999-0", "--partition", "0"), "beyond the last id"),
        (("--group", G, "--to", "latest", "--partition", "5"), "partitions 0..1"),
        (("--group", G, "--to", "sideways"), "latest, earliest, time or id"),
    ],
)
def test_bad_input_exits_2(
    capsys: pytest.CaptureFixture[str],
    redis_url: str,
    r: redis.Redis,
    key: str,
    args: tuple[str, ...],
    message: str,
) -> None:
    code, _, err = run(capsys, redis_url, "group", "set-position", "orders", *args, "--yes")
    assert code == 2
    assert message in err
    assert _position(r, key) == (b"1000-0", 2)


def test_a_pipeline_group_needs_force(
    capsys: pytest.CaptureFixture[str],
    redis_url: str,
    r: redis.Redis,
    mq_config: MQConfig,
    key: str,
) -> None:
    r.sadd(mq_config.keys.pipelines(), "enrich")
    r.hset(mq_config.keys.checkpoint_meta("enrich"), mapping={"topic": "orders", "group": G})
    base = ("group", "set-position", "orders", "--group", G, "--to", "latest")
    code, out, _ = run(capsys, redis_url, *base, "--dry-run")
    assert code == 0
    assert "pipeline enrich moves this group" in out
    code, _, err = run(capsys, redis_url, *base, "--yes")
    assert code != 0
    assert "moved by pipeline enrich" in err
    assert _position(r, key)[0] == b"1000-0"
    code, _, err = run(capsys, redis_url, *base, "--yes", "--force")
    assert code == 0, err
    assert _position(r, key) == (b"3000-0", 0)
