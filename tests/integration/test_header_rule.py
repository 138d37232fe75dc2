"""One header rule: a consumer, the console, a retry, the DLQ and a replay read the same headers.

Java writes headers as a JSON object of strings; other producers may not. Before
the rule had one home, JSON ``true`` reached a consumer as ``"True"`` but the
console as ``"true"``, ``null`` was dropped by one and shown as ``"null"`` by the
other, and a replay dropped objects and arrays.
"""

from __future__ import annotations

import json
import threading

import pytest
import redis

from mqcore.admin import Admin
from mqcore.codec import parse_headers
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
