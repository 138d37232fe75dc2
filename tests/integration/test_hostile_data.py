"""Hostile data: an app that can write to Redis writes values too large to decode (a 3 MB
Kryo string as a Java dead letter and as a Java retry item, a 2 MB JSON payload, a page of
900 KB letters) into a real redis-server. Pages answer 200 with the typed marker, the raw
bytes download gives the exact stored bytes to a user who may see payloads and 403 to a
masked viewer, and decoding memory stays bounded (tracemalloc peaks, asserted as sizes)."""

from __future__ import annotations

import json
import tracemalloc
from typing import Any

import pytest
from django.test import Client

from dashboard.models import SensitiveTopic
from mqcore.codec import DEFAULT_DECODE_BUDGET_BYTES, DEFAULT_MAX_DECODE_BYTES, DecodeBudget, kryo
from mqcore.dlq.letters import letters_from_entries
from mqcore.producer import Producer
from tests.integration.dlq_support import add_letters, make_topic, role_user
from tests.integration.raw_java import iso_now

pytestmark = [pytest.mark.redis, pytest.mark.django_db]

C = "/clusters/default/topics"
API = "/api/v1/clusters/default/topics"
MB = 1024 * 1024
KRYO_TEXT = "ü" + "x" * (3 * MB)  # 3 MB of text as Java's Kryo string (not the short form)


def _client(role: str, name: str) -> Client:
    client = Client()
    client.force_login(role_user(name, role))
    return client


def _kryo_letter(r: Any, cfg: Any, topic: str, payload: bytes) -> str:
    """A dead letter as a Java service using Redisson's default (Kryo) codec writes it."""
    fields = {
        "originalTopic": topic, "payload": None, "timestamp": iso_now(), "failedAt": iso_now(),
        "retryCount": 3, "maxRetries": 3, "partitionId": 0, "originalMessageId": "7-0",
        "headers": {"partitionId": "1", "x-runtime-error-message": "boom"},
    }  # fmt: skip
    raw = {kryo.encode(k): kryo.encode(v) for k, v in fields.items() if k != "payload"}
    raw[kryo.encode("payload")] = payload
    return str(r.xadd(cfg.keys.dlq(topic), raw).decode())


def _kryo_retry_item(r: Any, cfg: Any, topic: str, payload: bytes) -> str:
    item = cfg.keys.retry_item(topic, "kryo-big")
    r.hset(
        item,
        mapping={
            kryo.encode("topic"): kryo.encode(topic),
            kryo.encode("partitionId"): kryo.encode(0),
            kryo.encode("payload"): payload,
            kryo.encode("headers"): kryo.encode({"x-runtime-error-type": "E"}),
            kryo.encode("retryCount"): kryo.encode(2),
        },
    )
    r.zadd(cfg.keys.retry_zset(topic), {item: 1})
    return "kryo-big"


def _download_ok(client: Client, url: str, want: bytes) -> None:
    response = client.get(url)
    assert response.status_code == 200, response.content[:300]
    assert b"".join(response.streaming_content) == want  # type: ignore[attr-defined]
    assert response["Content-Type"] == "application/octet-stream"
    assert response["Content-Disposition"].startswith("attachment")
    assert response["X-Content-Type-Options"] == "nosniff"


def test_a_3mb_kryo_dead_letter_is_shown_as_too_large_and_downloads_exactly(r, mq_config) -> None:
    make_topic(mq_config, "orders")
    stored = kryo.encode(KRYO_TEXT)
    dlq_id = _kryo_letter(r, mq_config, "orders", stored)
    small = add_letters(r, mq_config, "orders", 1)[0]
    op = _client("Operator", "op")
    page = op.get(f"{C}/orders/dlq/")
    assert page.status_code == 200
    html = page.content.decode()
    assert f"too large, {len(stored)} bytes" in html
    assert f"{C}/orders/dlq/{dlq_id}/payload/" in html  # the download link
    api = op.get(f"{API}/orders/dlq").json()
    by_id = {letter["id"]: letter for letter in api["letters"]}
    assert by_id[dlq_id]["undecoded"] == {
        "size": len(stored), "reason": "too_large", "text": f"too large, {len(stored)} bytes",
    }  # fmt: skip
    assert by_id[dlq_id]["payload"] == ""
    assert by_id[dlq_id]["partition"] == 1
    assert by_id[small]["undecoded"] is None
    assert by_id[small]["payload"]
    letter = op.get(f"{C}/orders/dlq/{dlq_id}/")
    assert letter.status_code == 200
    assert b"too large" in letter.content
    assert op.get(f"{API}/orders/dlq/{dlq_id}").status_code == 200
    _download_ok(op, f"{C}/orders/dlq/{dlq_id}/payload/", stored)
    _download_ok(op, f"{API}/orders/dlq/{dlq_id}/payload", stored)


def test_a_3mb_kryo_retry_item_is_shown_as_too_large_and_downloads_exactly(r, mq_config) -> None:
    make_topic(mq_config, "orders")
    stored = kryo.encode(KRYO_TEXT)
    item = _kryo_retry_item(r, mq_config, "orders", stored)
    op = _client("Operator", "op")
    page = op.get(f"{C}/orders/retries/")
    assert page.status_code == 200
    assert f"too large, {len(stored)} bytes" in page.content.decode()
    api = op.get(f"{API}/orders/retries").json()
    [row] = api["items"]
    assert row["undecoded"]["reason"] == "too_large"
    assert row["payload"] == ""
    assert row["payload_size"] == len(stored)
    _download_ok(op, f"{C}/orders/retries/{item}/payload/", stored)
    _download_ok(op, f"{API}/orders/retries/{item}/payload", stored)


def test_a_2mb_json_payload_in_the_browser_and_the_message_page(r, mq_config) -> None:
    make_topic(mq_config, "orders", partitions=1)
    body = json.dumps({"items": ["y" * 100] * (2 * MB // 104)})
    assert len(body) > 2 * 1000 * 1000
    headers = json.dumps({"partitionId": "0"})
    fields = {"payload": body, "headers": headers, "timestamp": iso_now(), "key": "k"}
    inline = r.xadd(mq_config.keys.partition("orders", 0), fields).decode()  # a hostile app
    with Producer(mq_config.with_(max_payload_bytes=4 * MB)) as producer:
        out_of_line = producer.send("orders", body, key="k").id  # stored in a payload key
    op = _client("Operator", "op")
    page = op.get(f"{C}/orders/messages/")
    assert page.status_code == 200
    assert b"too large" in page.content
    api = op.get(f"{API}/orders/messages").json()
    assert api["messages"][-1]["payload_undecoded"]["reason"] == "too_large"
    for entry_id in (inline, out_of_line):
        message = op.get(f"{C}/orders/messages/0/{entry_id}/")
        assert message.status_code == 200
        assert b"payload-undecoded" in message.content
        one = op.get(f"{API}/orders/messages/0/{entry_id}").json()
        assert one["undecoded"]["size"] >= len(body)
        assert one["payload"] == ""
    _download_ok(op, f"{C}/orders/messages/0/{inline}/payload/", body.encode())
    _download_ok(op, f"{API}/orders/messages/0/{inline}/payload", body.encode())
    stored = json.dumps(body).encode()  # the payload key holds the JSON text, as Java's
    _download_ok(op, f"{API}/orders/messages/0/{out_of_line}/payload", stored)


def test_a_masked_viewer_gets_403_and_a_viewer_of_plain_topics_downloads(r, mq_config) -> None:
    make_topic(mq_config, "payments")
    make_topic(mq_config, "orders")
    stored = kryo.encode(KRYO_TEXT)
    secret = _kryo_letter(r, mq_config, "payments", stored)
    plain = _kryo_letter(r, mq_config, "orders", stored)
    item = _kryo_retry_item(r, mq_config, "payments", stored)
    SensitiveTopic.objects.create(pattern="payments")
    viewer = _client("Viewer", "v")
    page = viewer.get(f"{C}/payments/dlq/")
    assert page.status_code == 200
    assert f"{C}/payments/dlq/{secret}/payload/" not in page.content.decode()  # no link
    for url in (
        f"{C}/payments/dlq/{secret}/payload/",
        f"{API}/payments/dlq/{secret}/payload",
        f"{C}/payments/retries/{item}/payload/",
        f"{API}/payments/retries/{item}/payload",
    ):
        response = viewer.get(url)
        assert response.status_code == 403, url
        assert stored[:1000] not in response.content
    _download_ok(viewer, f"{C}/orders/dlq/{plain}/payload/", stored)  # not sensitive
    _download_ok(_client("Operator", "op"), f"{API}/payments/dlq/{secret}/payload", stored)


def test_a_page_of_900kb_letters_stops_decoding_at_its_budget(r, mq_config) -> None:
    make_topic(mq_config, "orders")
    count = DEFAULT_DECODE_BUDGET_BYTES // (900 * 1024) + 3  # 12 letters, 10.5 MiB
    add_letters(r, mq_config, "orders", count, payload=lambda i: f"{i:04d}" + "z" * 900 * 1024)
    op = _client("Operator", "op")
    page = op.get(f"{C}/orders/dlq/")
    assert page.status_code == 200
    assert b"not decoded: page budget reached" in page.content
    letters = op.get(f"{API}/orders/dlq").json()["letters"]
    assert len(letters) == count
    reasons = [(letter["undecoded"] or {}).get("reason") for letter in letters]
    decoded = reasons.count(None)
    assert decoded == DEFAULT_DECODE_BUDGET_BYTES // (900 * 1024 + 4)  # 9 letters, newest first
    assert reasons[decoded:] == ["budget"] * (count - decoded)  # the rest, in page order
    last = letters[-1]["id"]
    _download_ok(op, f"{C}/orders/dlq/{last}/payload/", b"0000" + b"z" * 900 * 1024)


def _peak(fn: Any) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_decoding_memory_stays_bounded(r, mq_config) -> None:
    """Peaks of decoding alone (the entries already fetched): a 3 MB Kryo letter costs no
    decode at all; a page of 900 KB letters at most its budget; a Kryo string just under
    the cap about twice its size (main: 133x)."""
    make_topic(mq_config, "orders")
    _kryo_letter(r, mq_config, "orders", kryo.encode(KRYO_TEXT))
    [entries] = [r.xrange(mq_config.keys.dlq("orders"))]
    entries = [(i, [x for kv in f.items() for x in kv]) for i, f in entries]
    assert _peak(lambda: letters_from_entries(entries, DecodeBudget())) < 64 * 1024

    r.delete(mq_config.keys.dlq("orders"))
    add_letters(r, mq_config, "orders", 12, payload=lambda i: "z" * 900 * 1024)
    entries = [
        (i, [x for kv in f.items() for x in kv]) for i, f in r.xrange(mq_config.keys.dlq("orders"))
    ]
    bound = DEFAULT_DECODE_BUDGET_BYTES + 256 * 1024  # the budget, and the letters' small fields
    assert _peak(lambda: letters_from_entries(entries, DecodeBudget())) < bound

    ascii_value = kryo.encode("!" + "x" * (DEFAULT_MAX_DECODE_BYTES - 16))
    assert _peak(lambda: kryo.decode(ascii_value)) < 1.1 * len(ascii_value)  # the str itself
    value = kryo.encode("!" + "日" * ((DEFAULT_MAX_DECODE_BYTES - 16) // 3))
    assert len(value) <= DEFAULT_MAX_DECODE_BYTES
    # the str and the working buffer of Python's UTF-8 decoder (as wide as the widest
    # character): at most 3x the value; per-character lists took 60x to 133x
    assert _peak(lambda: kryo.decode(value)) < 3 * len(value) + 64 * 1024
