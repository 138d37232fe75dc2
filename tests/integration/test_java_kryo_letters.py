"""Dead letters a Java service wrote through Redisson's Kryo codec (bytes from Kryo 5.6.2,
tests/fixtures/kryo) are read in full by mqcore and the console; replaying one is refused
with a clear reason and writes nothing (it used to replay an empty payload to partition 0)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import redis
from django.test import Client

from mqcore.config import MQConfig
from mqcore.dlq import DeadLetters
from tests.integration.dlq_support import add_letters, make_topic, role_user

pytestmark = [pytest.mark.redis, pytest.mark.django_db]

HEX = dict(
    line.split("\t")
    for line in (Path(__file__).parent.parent / "fixtures" / "kryo" / "redisson_kryo5.tsv")
    .read_text()
    .splitlines()
)


def _b(label: str) -> bytes:
    return bytes.fromhex(HEX[label])


def java_letter(r: redis.Redis, cfg: MQConfig) -> str:
    """A DLQ entry exactly as Java's DeadLetterCodec.buildEntry + Redisson writes it."""
    fields = {
        _b("field:originalTopic"): _b("str:orders"),
        _b("field:payload"): _b("str:json"),
        _b("field:timestamp"): _b("str:ts"),
        _b("field:failedAt"): _b("str:ts"),
        _b("field:retryCount"): _b("int:3"),
        _b("field:partitionId"): _b("int:2"),
        _b("field:headers"): _b("map:three"),
        _b("field:originalMessageId"): _b("str:id"),
        _b("field:maxRetries"): _b("int:3"),
    }
    return r.xadd(cfg.keys.dlq("orders"), fields).decode()  # type: ignore[arg-type]


def test_java_letters_read_in_full_beside_mqcore_ones(r: redis.Redis, mq_config: MQConfig) -> None:
    make_topic(mq_config, "orders", 4)
    add_letters(r, mq_config, "orders", 1, partitions=4)
    java_id = java_letter(r, mq_config)
    dl = DeadLetters(mq_config)
    page = dl.page("orders", limit=10)
    assert len(page.letters) == 2
    letter = next(x for x in page.letters if x.id == java_id)
    assert letter.payload == '{"order":7,"customer":"c-7"}'
    assert (letter.partition, letter.retry_count, letter.max_retries) == (2, 3, 3)
    assert letter.original_topic == "orders"
    assert letter.original_id == "1700000000000-0"
    assert letter.failed_at == "2026-11-24T01:00:00.123Z"
    assert letter.key == "c-7"
    assert letter.headers["x-runtime-error-message"] == "boom: card declined"
    one = dl.get("orders", java_id)
    assert one.payload == letter.payload
    filtered = dl.page("orders", limit=10, text="card declined")
    assert [x.id for x in filtered.letters] == [java_id]


def test_a_java_letter_replays_to_its_partition_with_its_payload_key_and_headers(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    make_topic(mq_config, "orders", 4)
    java_id = java_letter(r, mq_config)
    dl = DeadLetters(mq_config)
    plan = dl.plan("orders", [java_id])
    assert [(p.reason, p.partition) for p in plan] == [("would-replay", 2)]
    done = dl.replay("orders", java_id, by="ops")
    assert (done.replayed, done.partition) == (True, 2)
    entry = r.xrange(mq_config.keys.partition("orders", 2))[0][1]
    assert entry[b"payload"] == b'{"order":7,"customer":"c-7"}'
    assert entry[b"key"] == b"c-7"
    headers = json.loads(entry[b"headers"])
    assert headers["x-runtime-error-message"] == "boom: card declined"
    assert headers["x-replayed-from-dlq"] == java_id
    assert headers["x-original-message-id"] == "1700000000000-0"
    assert sum(r.xlen(mq_config.keys.partition("orders", p)) for p in range(4)) == 1
    again = dl.replay("orders", java_id)
    assert (again.replayed, again.reason) == (False, "already-replayed")  # idempotent


def test_console_shows_a_java_letter(r: redis.Redis, mq_config: MQConfig) -> None:
    make_topic(mq_config, "orders", 4)
    java_id = java_letter(r, mq_config)
    client = Client()
    client.force_login(role_user("olga", "Operator"))
    api = client.get(f"/api/v1/clusters/default/topics/orders/dlq/{java_id}").json()
    text = str(api)
    assert "card declined" in text
    assert "c-7" in text
    page = client.get(f"/clusters/default/topics/orders/dlq/{java_id}/").content.decode()
    assert "customer" in page
    assert "boom: card declined" in page


def test_collectors_page_says_a_java_service_writes_here(
    r: redis.Redis, mq_config: MQConfig, console_r: redis.Redis
) -> None:
    from dashboard.clusters import console_keys, console_redis
    from dashboard.collectors.passes import collect_cluster
    from dashboard.store import ConsoleStore

    make_topic(mq_config, "orders", 4)
    make_topic(mq_config, "plain-topic", 1)
    java_letter(r, mq_config)
    r.hset(mq_config.keys.commit_frontier("orders", 0), _b("field:payload"), _b("str:id"))
    collect_cluster("default", claim=False, store=ConsoleStore(console_redis(), console_keys()))
    client = Client()
    client.force_login(role_user("vic", "Viewer"))
    rows = client.get("/api/v1/collectors").json()
    row = rows["collectors"][0] if isinstance(rows, dict) else rows[0]
    assert row["java"] == {
        "dlq": ["orders"], "frontier": ["orders"], "configured": "plain", "seen": True,
        "mismatch": True,
    }  # fmt: skip
    page = client.get("/collectors/").content.decode()
    assert "java-kryo</code> for this cluster" in page


def test_mqcore_letters_in_java_kryo_mode_are_what_java_writes(
    r: redis.Redis, redis_url: str
) -> None:
    from mqcore.codec import kryo
    from mqcore.consumer import Consumer, ConsumerOptions, Outcome
    from mqcore.producer import Producer

    cfg = MQConfig.from_url(redis_url, encoding="java-kryo")
    make_topic(cfg, "orders", 4)
    payload = 'caf\u00e9 {"order": 7} \U0001f600'
    Producer(cfg).send("orders", payload, key="c-7", partition=3,
                       headers={"trace": "t-1"})  # fmt: skip
    consumer = Consumer(cfg, "orders", lambda m: Outcome.FAIL,
                        ConsumerOptions(block_ms=100))  # fmt: skip
    consumer.start()
    try:
        import time

        deadline = time.monotonic() + 15
        while not r.xlen(cfg.keys.dlq("orders")) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        consumer.stop(10)
    entry_id, raw = r.xrange(cfg.keys.dlq("orders"))[0]
    fields = {kryo.decode(k): kryo.decode(v) for k, v in raw.items()}  # every name and value
    assert fields["payload"] == payload  # Kryo strings byte for byte (checked in unit tests)
    assert (fields["partitionId"], fields["retryCount"], fields["maxRetries"]) == (3, 0, 3)
    assert fields["originalTopic"] == "orders"
    assert fields["headers"]["key"] == "c-7"
    assert fields["headers"]["trace"] == "t-1"
    assert raw[kryo.encode("partitionId")] == kryo.encode(3)
    letter = DeadLetters(cfg).get("orders", entry_id.decode())  # and mqcore reads it back
    assert (letter.payload, letter.partition, letter.key) == (payload, 3, "c-7")
    done = DeadLetters(cfg).replay("orders", entry_id.decode())
    assert (done.replayed, done.partition) == (True, 3)
