"""R14 (producer side): oversized or malformed input is refused before any write."""

from __future__ import annotations

import json

import pytest
import redis

from mqcore.codec import HEADERS_SEND_MAX_BYTES
from mqcore.config import MQConfig
from mqcore.errors import InvalidArgumentError, PayloadTooLargeError, UnknownTopicError
from mqcore.producer import OutgoingMessage, Producer
from mqcore.topics import Topics

pytestmark = [pytest.mark.redis, pytest.mark.faults]

TEN_MB = 10 * 1024 * 1024


@pytest.fixture
def producer(mq_config: MQConfig) -> Producer:
    Topics(mq_config).create("t", 2)
    p = Producer(mq_config)
    p.send("t", "warm-up")  # cache the topic, so refusals are not just cache misses
    yield p
    p.close()


def _lengths(r: redis.Redis) -> tuple[int, list[int]]:
    return r.dbsize(), [r.xlen(f"stream:topic:t:p:{i}") for i in range(2)]


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda p: p.send("t", "x" * TEN_MB), PayloadTooLargeError, r"10485760 bytes.*1048576"),
        (lambda p: p.send("t", b"\x00" * TEN_MB), PayloadTooLargeError, "limit"),
        (lambda p: p.send("t", "x", headers={"n": 1}), InvalidArgumentError, "str"),
        (lambda p: p.send("t", "x", headers={"n": None}), InvalidArgumentError, "str"),
        (lambda p: p.send("t", "x", headers={b"n": "v"}), InvalidArgumentError, "str"),
        (lambda p: p.send("t", "x", headers=["a"]), InvalidArgumentError, "mapping"),
        (lambda p: p.send("t", "\udcff invalid utf-8"), InvalidArgumentError, "not valid text"),
        (lambda p: p.send("t", "x", headers={"h": "\ud800"}), InvalidArgumentError, "valid text"),
        (  # room left under the readers' cap for what retries and letters add
            lambda p: p.send("t", "x", headers={"h": "v" * HEADERS_SEND_MAX_BYTES}),
            InvalidArgumentError,
            rf"headers are \d+ bytes as JSON; the limit is {HEADERS_SEND_MAX_BYTES} bytes",
        ),
        (lambda p: p.send("nope", "x"), UnknownTopicError, "unknown topic 'nope'"),
        (lambda p: p.send("t\n", "x"), InvalidArgumentError, "invalid topic name"),
        (
            lambda p: p.send_many(
                "t", [OutgoingMessage("ok")] * 10 + [OutgoingMessage("x" * TEN_MB)]
            ),
            PayloadTooLargeError,
            "limit",
        ),
    ],
)
def test_refused_before_any_write(
    producer: Producer, r: redis.Redis, call: object, error: type[Exception], message: str
) -> None:
    before = _lengths(r)
    with pytest.raises(error, match=message):
        call(producer)  # type: ignore[operator]
    assert _lengths(r) == before


def test_markup_in_headers_is_stored_verbatim(producer: Producer, r: redis.Redis) -> None:
    hostile = {"x-note": '<script>alert(1)</script>" onmouseover=x hx-get=/admin'}
    res = producer.send("t", "<b>payload</b>", headers=hostile)
    [(_, fields)] = r.xrange(f"stream:topic:t:p:{res.partition}", res.id, res.id)
    assert json.loads(fields[b"headers"])["x-note"] == hostile["x-note"]
    assert fields[b"payload"] == b"<b>payload</b>"


def test_big_payload_under_a_raised_limit_is_written_whole(
    mq_config: MQConfig, r: redis.Redis
) -> None:
    Topics(mq_config).create("t", 2)
    with Producer(mq_config.with_(max_payload_bytes=2 * TEN_MB)) as producer:
        res = producer.send("t", b"\xfe" * TEN_MB)
    [(_, fields)] = r.xrange(f"stream:topic:t:p:{res.partition}", res.id, res.id)
    ref = json.loads(fields[b"headers"])["x-payload-hash-ref"]
    assert r.strlen(ref) == TEN_MB
