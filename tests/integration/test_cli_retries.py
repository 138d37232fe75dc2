"""``mqcore retries``: the --json contract, retry now, delete, exit code 2 on bad input."""

from __future__ import annotations

import json

import pytest
import redis

from mqcore.cli import main
from mqcore.config import MQConfig
from tests.integration.raw_java import create_topic
from tests.integration.retry_items import schedule

pytestmark = pytest.mark.redis

NOW = 1_700_000_000_000


def run(capsys: pytest.CaptureFixture[str], url: str, *args: str) -> tuple[int, str, str]:
    code = main(["--redis-url", url, *args])
    out, err = capsys.readouterr()
    return code, out, err


def js(capsys: pytest.CaptureFixture[str], url: str, *args: str) -> dict:  # type: ignore[type-arg]
    code, out, err = run(capsys, url, "--json", *args)
    assert code == 0, err
    data = json.loads(out)
    assert isinstance(data, dict)
    return data


def test_list_retry_delete(
    capsys: pytest.CaptureFixture[str], redis_url: str, r: redis.Redis
) -> None:
    keys = MQConfig.from_url(redis_url).keys
    create_topic(r, keys, "orders", 2)
    due = [
        schedule(r, keys, "orders", i % 2, f"due {i}", due_ms=NOW + i, key="k") for i in range(3)
    ]
    later = schedule(r, keys, "orders", 1, "<later>", due_ms=2**52, key="z")
    ids = [m.rsplit(":", 1)[1] for m in (*due, later)]
    page = js(capsys, redis_url, "retries", "list", "orders", "--limit", "2")
    assert [row["id"] for row in page["items"]] == ids[:2]
    row = page["items"][0]
    assert set(row) >= {"id", "due_ms", "due_at", "partition", "retry_count", "key", "payload",
                        "headers", "error", "original_id", "encoding"}  # fmt: skip
    assert (page["total"], page["due"], page["complete"]) == (4, 3, False)
    rest = js(capsys, redis_url, "retries", "list", "orders", "--cursor", page["next_cursor"])
    assert [row["id"] for row in rest["items"]] == ids[2:]
    sched = js(capsys, redis_url, "retries", "list", "orders", "--state", "scheduled")
    assert [row["id"] for row in sched["items"]] == [ids[3]]
    code, out, _ = run(capsys, redis_url, "retries", "list", "orders", "--key", "z")
    assert code == 0
    assert "<later>" in out
    assert "ID" in out.splitlines()[0]
    got = js(capsys, redis_url, "retries", "get", "orders", ids[3])
    assert got["payload"] == "<later>"
    done = js(capsys, redis_url, "retries", "retry", "orders", ids[3])
    assert (done["retried"], done["missing"]) == (1, 0)
    again = js(capsys, redis_url, "retries", "retry", "orders", ids[3])
    assert (again["retried"], again["missing"]) == (0, 1)
    assert r.xlen("stream:topic:orders:p:1") == 1
    code, _, err = run(capsys, redis_url, "retries", "delete", "orders", "--all-matching")
    assert code == 2
    assert "--yes" in err
    gone = js(capsys, redis_url, "retries", "delete", "orders", "--all-matching", "--yes",
              "--state", "due")  # fmt: skip
    assert (gone["deleted"], gone["more"]) == (3, False)
    assert r.zcard(keys.retry_zset("orders")) == 0


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["retries", "list", "ghost"], "unknown topic"),
        (["retries", "list", "orders", "--state", "soon"], "invalid choice"),
        (["retries", "list", "orders", "--cursor", "zz"], "invalid cursor"),
        (["retries", "list", "orders", "--key", "k", "--offset", "3"], "cursor"),
        (["retries", "list", "orders", "--limit", "0"], "limit"),
        (["retries", "get", "orders", "a/b"], "invalid retry item id"),
        (["retries", "get", "orders", "abc"], "no retry item"),
        (["retries", "retry", "orders"], "--all-matching"),
        (["retries", "retry", "orders", "ok", "../x"], "invalid retry item id"),
        (["retries", "delete", "ghost", "abc"], "unknown topic"),
        (["retries", "delete", "orders", "abc", "--all-matching"], "not both"),
    ],
)
def test_bad_input_exits_2_and_writes_nothing(
    capsys: pytest.CaptureFixture[str], redis_url: str, r: redis.Redis, args: list[str], needle: str
) -> None:
    keys = MQConfig.from_url(redis_url).keys
    create_topic(r, keys, "orders", 2)
    member = schedule(r, keys, "orders", 0, "x", due_ms=NOW)
    code, out, err = run(capsys, redis_url, *args)
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert needle in err
    assert r.zcard(keys.retry_zset("orders")) == 1
    assert r.exists(member)
