"""One header rule: a consumer, the console, a retry, the DLQ and a replay read the same headers.

Java writes headers as a JSON object of strings; other producers may not. Before
the rule had one home, JSON ``true`` reached a consumer as ``"True"`` but the
console as ``"true"``, ``null`` was dropped by one and shown as ``"null"`` by the
other, and a replay dropped objects and arrays.
"""

from __future__ import annotations

import json
import random
import threading
from importlib import resources

import pytest
import redis

from mqcore.admin import Admin
from mqcore.codec import HEADERS_MAX_BYTES, parse_headers
from mqcore.config import MQConfig
from mqcore.consumer import Consumer, ConsumerOptions, Outcome
from mqcore.dlq import DeadLetters
from mqcore.models import Message
from mqcore.retry import RetryPolicy
from mqcore.topics import Topics
from tests.integration.raw_java import partition_fields
from tests.integration.test_consumer import running, wait_for

pytestmark = pytest.mark.redis

FOREIGN = {"s": "x", "b": True, "n": 3, "f": 1.5, "z": None, "o": {"a": 1}, "l": [1, "two"]}
EXPECTED = {"s": "x", "b": "true", "n": "3", "f": "1.5", "o": '{"a":1}', "l": '[1,"two"]'}


def _same(headers: dict[str, str]) -> dict[str, str]:
    assert "z" not in headers  # null drops the header
    return {k: headers.get(k, "<missing>") for k in EXPECTED}


def test_the_rule_itself() -> None:
    assert _same(parse_headers(json.dumps(FOREIGN))) == EXPECTED
    assert parse_headers(b'{"a":"1"}') == {"a": "1"}


def test_consumer_console_retry_dlq_and_replay_agree(r: redis.Redis, mq_config: MQConfig) -> None:
    Topics(mq_config).create("orders", 1)
    fields = partition_fields("orders", 0, "body", key="k1")
    fields["headers"] = json.dumps({**FOREIGN, "partitionId": "0"})
    entry_id = r.xadd(mq_config.keys.partition("orders", 0), fields).decode()
    console = Admin(mq_config, r)
    assert _same(console.message("orders", 0, entry_id).headers) == EXPECTED

    seen: list[dict[str, str]] = []
    lock = threading.Lock()

    def handler(message: Message) -> Outcome:
        with lock:
            seen.append(dict(message.headers))
        return Outcome.RETRY  # retried (re-encoded by Python), then dead-lettered by Lua

    options = ConsumerOptions(
        block_ms=100,
        retry_policy=RetryPolicy(max_retries=1, base_ms=10, max_ms=20, jitter=0.0),
        retry_move_interval_ms=50,
    )
    dlq = DeadLetters(mq_config, r)
    with running(Consumer(mq_config, "orders", handler, options)):
        wait_for(lambda: dlq.depth("orders") == 1)
    assert len(seen) >= 2  # the first delivery and the retried ones (the entry's maxRetries)
    assert all(_same(h) == EXPECTED for h in seen)

    letter = dlq.page("orders").letters[0]
    assert _same(dlq.get("orders", letter.id).headers) == EXPECTED  # written by dead_letter.lua
    result = dlq.replay("orders", letter.id, by="test")
    assert result.new_id is not None
    replayed = console.message("orders", 0, result.new_id).headers  # written by replay_letters.lua
    assert _same(replayed) == EXPECTED


JAVA_MAP = "{trace=t-9, note=boom, bad, really, partitionId=0}"


def test_java_map_to_string_headers_read_the_same_everywhere(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    """Java's DeadLetterQueueManager replays write the headers map's toString()."""
    expected = {"trace": "t-9", "note": "boom, bad, really", "partitionId": "0"}
    assert parse_headers(JAVA_MAP) == expected
    assert parse_headers("{not a map}") == {}
    Topics(mq_config).create("orders", 1)
    fields = partition_fields("orders", 0, "body", key="k1")
    fields["headers"] = JAVA_MAP
    entry_id = r.xadd(mq_config.keys.partition("orders", 0), fields).decode()
    console = Admin(mq_config, r)
    assert console.message("orders", 0, entry_id).headers == expected
    # dead-lettered by the Lua script, then replayed by the other: the same headers
    r.xgroup_create(mq_config.keys.partition("orders", 0), "g", id="0")
    r.xreadgroup("g", "c1", {mq_config.keys.partition("orders", 0): ">"})
    moved = console.move_to_dlq("orders", "g", 0, [entry_id], reason="test")
    assert moved == [entry_id]
    dlq = DeadLetters(mq_config, r)
    letter = dlq.page("orders").letters[0]
    assert (letter.headers["trace"], letter.headers["note"]) == ("t-9", "boom, bad, really")
    result = dlq.replay("orders", letter.id, by="test")
    assert result.new_id is not None
    replayed = console.message("orders", 0, result.new_id).headers
    assert (replayed["trace"], replayed["note"]) == ("t-9", "boom, bad, really")


def test_a_minus_zero_partition_header_replays_as_zero(r: redis.Redis, mq_config: MQConfig) -> None:
    from tests.integration.dlq_support import add_letters

    Topics(mq_config).create("orders", 2)
    ids = add_letters(r, mq_config, "orders", 1, partitions=1,
                      headers=lambda i: {"partitionId": "-0"})  # fmt: skip
    result = DeadLetters(mq_config, r).replay("orders", ids[0], by="test")
    assert result.partition == 0
    entry = r.xrange(mq_config.keys.partition("orders", 0))[0][1]
    assert entry[b"partitionId"] == b"0"
    assert json.loads(entry[b"headers"])["partitionId"] == "0"


def _lua_rule(r: redis.Redis, texts: list[str]) -> list[dict[str, str]]:
    """``texts`` read by lib/headers.lua's ``read_headers`` (the rule every script pastes in)."""
    lib = resources.files("mqcore.scripts").joinpath("lib", "headers.lua").read_text("utf-8")
    script = lib + (
        "\nlocal out = {}"
        "\nfor i = 1, #ARGV do out[i] = cjson.encode({h = read_headers(ARGV[i])}) end"
        "\nreturn out"
    )
    rows = [json.loads(row)["h"] for row in r.eval(script, 0, *texts)]
    return [row if isinstance(row, dict) else {} for row in rows]  # cjson: {} encodes as []


def test_lua_and_python_read_random_java_maps_alike(r: redis.Redis) -> None:
    """Odd ``{k=v}`` texts, among them a body that opens with ``", "`` (once read as
    headers by Python and as none by Lua)."""
    rng = random.Random(30)
    parts = ["{", "}", "=", ",", " ", ", ", "a", "b", "k=", ", k=", '"']
    texts = [
        "{" + "".join(rng.choice(parts) for _ in range(rng.randint(0, 12))) + "}"
        for _ in range(2000)
    ] + ["{, k=b}", "{k=v, , j=w}", "{k=v, j}", "{k==v, j=, l=x}"]
    assert _lua_rule(r, texts) == [parse_headers(t) for t in texts]


def test_headers_over_the_cap_read_as_none_in_lua_and_python(r: redis.Redis) -> None:
    def sized(size: int, shape: str) -> str:
        if shape == "json":  # '{"a":"xxx"}'
            return '{"a":"' + "x" * (size - 8) + '"}'
        return "{a=" + "é" * ((size - 4) // 2) + "x" * ((size - 4) % 2) + "}"  # 2-byte chars

    texts = [sized(HEADERS_MAX_BYTES + d, s) for s in ("json", "map") for d in (0, 1)]
    assert [len(t.encode()) for t in texts] == [HEADERS_MAX_BYTES, HEADERS_MAX_BYTES + 1] * 2
    python = [parse_headers(t) for t in texts]
    assert [bool(h) for h in python] == [True, False, True, False]
    assert python[0]["a"] == "x" * (HEADERS_MAX_BYTES - 8)
    assert [parse_headers(t.encode()) for t in texts] == python
    assert _lua_rule(r, texts) == python
