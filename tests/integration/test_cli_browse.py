"""``mqcore browse``: the --json contract, the human table, paging, exit code 2 on bad input."""

from __future__ import annotations

import json
import time

import pytest
import redis

from mqcore.cli import main
from mqcore.config import MQConfig

pytestmark = pytest.mark.redis


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


@pytest.fixture
def orders(capsys: pytest.CaptureFixture[str], redis_url: str) -> str:
    assert run(capsys, redis_url, "topic", "create", "orders", "--partitions", "2")[0] == 0
    for i in range(6):
        payload = json.dumps({"customer": f"c-{i % 2}", "amount": i * 50})
        args = ("--payload", payload, "--partition", str(i % 2), "--key", f"k{i}", "--header")
        code, _, err = run(capsys, redis_url, "produce", "orders", *args, f"n={i}")
        assert code == 0, err
        time.sleep(0.002)  # one millisecond each: the merge by id is the send order
    return redis_url


def test_browse_json_contract_and_paging(capsys: pytest.CaptureFixture[str], orders: str) -> None:
    first = js(capsys, orders, "browse", "orders", "--limit", "4")
    assert set(first) >= {
        "topic", "order", "partitions", "messages", "next_cursor", "scanned", "max_scan",
        "stopped_at_bound",
    }  # fmt: skip
    row = first["messages"][0]
    assert set(row) >= {
        "partition", "id", "key", "timestamp", "headers", "payload", "payload_size",
        "payload_truncated", "retry_count",
    }  # fmt: skip
    assert [m["key"] for m in first["messages"]] == ["k5", "k4", "k3", "k2"]
    rest = js(capsys, orders, "browse", "orders", "--limit", "4", "--cursor", first["next_cursor"])
    assert [m["key"] for m in rest["messages"]] == ["k1", "k0"]
    assert rest["next_cursor"] is None
    oldest = js(capsys, orders, "browse", "orders", "--oldest", "--partition", "1", "--limit", "9")
    assert [m["key"] for m in oldest["messages"]] == ["k1", "k3", "k5"]


def test_browse_filters(capsys: pytest.CaptureFixture[str], orders: str) -> None:
    where = js(capsys, orders, "browse", "orders", "--where",
               'payload.customer == "c-1" and payload.amount > 100')  # fmt: skip
    assert [m["key"] for m in where["messages"]] == ["k5", "k3"]
    assert where["scanned"] == 6
    assert [
        m["key"] for m in js(capsys, orders, "browse", "orders", "--key", "k2")["messages"]
    ] == ["k2"]
    header = js(capsys, orders, "browse", "orders", "--header", "n=4")
    assert [m["key"] for m in header["messages"]] == ["k4"]
    text = js(capsys, orders, "browse", "orders", "--text", '"AMOUNT": 250')
    assert [m["key"] for m in text["messages"]] == ["k5"]
    cut = js(capsys, orders, "browse", "orders", "--limit", "1", "--max-bytes", "5")
    assert cut["messages"][0]["payload"] == '{"cus'
    assert cut["messages"][0]["payload_truncated"] is True
    bound = js(capsys, orders, "browse", "orders", "--key", "k0", "--max-scan", "2")
    assert bound["stopped_at_bound"] is True
    assert bound["messages"] == []
    assert bound["next_cursor"]


def test_browse_human_table(capsys: pytest.CaptureFixture[str], orders: str) -> None:
    code, out, _ = run(capsys, orders, "browse", "orders", "--limit", "2")
    assert code == 0
    assert out.splitlines()[0].split() == ["PARTITION", "ID", "KEY", "TIMESTAMP", "PAYLOAD"]
    assert "next: --cursor " in out


@pytest.mark.parametrize(
    "args",
    [
        ("--where", 'payload.customer = "c-1"'),
        ("--where", "payload.amount >"),
        ("--limit", "0"),
        ("--max-scan", "0"),
        ("--from-id", "nope"),
        ("--from-time", "yesterday"),
        ("--cursor", "garbage"),
        ("--partition", "7"),
        ("--header", "=x"),
        ("--max-bytes", "0"),
        ("--from-id", "1-0", "--from-time", "5"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str], orders: str, args: tuple[str, ...]
) -> None:
    code, out, err = run(capsys, orders, "browse", "orders", *args)
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert err.startswith("mqcore: error: ")


def test_unknown_topic_exits_2(capsys: pytest.CaptureFixture[str], redis_url: str) -> None:
    code, _, err = run(capsys, redis_url, "browse", "nope")
    assert code == 2
    assert "unknown topic" in err


def test_message_shows_delivery_and_exits_2_on_bad_input(
    capsys: pytest.CaptureFixture[str], orders: str, r: redis.Redis
) -> None:
    newest = js(capsys, orders, "browse", "orders", "--partition", "1", "--limit", "1")
    entry_id = newest["messages"][0]["id"]
    key = MQConfig.from_url(orders).keys.partition("orders", 1)
    r.xreadgroup("default-group", "w1", {key: ">"})
    data = js(capsys, orders, "message", "orders", "1", entry_id)
    assert data["id"] == entry_id
    assert data["key"] == "k5"
    group = data["trace"]["groups"][0]
    assert (group["group"], group["state"], group["consumer"]) == ("default-group", "pending", "w1")
    assert data["trace"]["dead_letters"] == []
    code, out, _ = run(capsys, orders, "message", "orders", "1", entry_id)
    assert code == 0
    assert "pending" in out
    for bad in (("orders", "1", "nope"), ("orders", "9", entry_id), ("orders", "1", "1-1")):
        code, _, err = run(capsys, orders, "message", *bad)
        assert code == 2, bad
        assert err.startswith("mqcore: error: ")
