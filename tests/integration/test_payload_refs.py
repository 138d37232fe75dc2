"""Out-of-line payload references are data a producer wrote: the console and the
consumer read one only when it names a payload key of the entry's own partition,
and only up to a size bound (real Redis, Django test client, real Consumer)."""

from __future__ import annotations

import json
import threading

import pytest
import redis
from django.contrib.auth.models import Group
from django.test import Client

from dashboard.models import GroupTopicScope
from mqcore.config import MQConfig
from mqcore.consumer import Consumer
from mqcore.models import Message
from mqcore.payloads import load_payload
from mqcore.producer import Producer
from mqcore.topics import Topics
from tests.integration.dlq_support import role_user
from tests.integration.test_consumer import FAST, running, wait_for

pytestmark = [pytest.mark.redis]

SECRET = "card-4111-" + "s" * 70_000  # over 64 KB: stored out of line


def _secret_ref(r: redis.Redis, mq_config: MQConfig) -> str:
    Topics(mq_config).create("secrets", 1)
    with Producer(mq_config) as producer:
        sent = producer.send("secrets", SECRET)
    [(_, fields)] = r.xrange(mq_config.keys.partition("secrets", 0), sent.id, sent.id)
    return str(json.loads(fields[b"headers"])["x-payload-hash-ref"])


def _forged(r: redis.Redis, mq_config: MQConfig, ref: str, topic: str = "orders-eu") -> str:
    headers = {"x-payload-storage-type": "hash", "x-payload-hash-ref": ref}
    entry = r.xadd(mq_config.keys.partition(topic, 0), {"headers": json.dumps(headers)})
    return entry.decode()


@pytest.mark.django_db
def test_forged_reference_to_another_topic_is_refused_on_the_message_page(r, mq_config) -> None:
    ref = _secret_ref(r, mq_config)
    Topics(mq_config).create("orders-eu", 1)
    forged = _forged(r, mq_config, ref)
    role_user("seed", None)
    scoped = Group.objects.create(name="orders-viewers")
    scoped.permissions.set(Group.objects.get(name="Viewer").permissions.all())
    GroupTopicScope.objects.create(group=scoped, pattern="orders-*")
    user = role_user("scoped", None)
    user.groups.add(scoped)
    client = Client()
    client.force_login(user)
    page = client.get(f"/clusters/default/topics/orders-eu/messages/0/{forged}/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "card-4111" not in text
    assert "reference refused" in text
    api = client.get(f"/api/v1/clusters/default/topics/orders-eu/messages/0/{forged}")
    assert api.status_code == 200
    assert "card-4111" not in json.dumps(api.json())
    assert "reference refused" in json.dumps(api.json())
    # the topic's own out-of-line payloads still load
    with Producer(mq_config) as producer:
        own = producer.send("orders-eu", "big-" + "x" * 70_000)
    page = client.get(f"/clusters/default/topics/orders-eu/messages/0/{own.id}/")
    assert "big-xxxx" in page.content.decode()


@pytest.mark.parametrize(
    "ref",
    [
        "streaming:mq:payload:orders-eu:p:1:abc",  # another partition of the same topic
        "streaming:mq:payload:orders-eu:p:0:",  # the prefix alone
        "streaming:mq:payload:orders-eu:p:0:a:b",  # a key below the prefix's namespace
        "streaming:mq:topics",  # any other key
    ],
)
def test_load_payload_refuses_keys_outside_the_entry_partition(r, mq_config, ref) -> None:
    from mqcore.errors import PayloadRefRefusedError

    r.set(ref, json.dumps("leak"))
    prefix = mq_config.keys.payload_prefix("orders-eu", 0)
    with pytest.raises(PayloadRefRefusedError):
        load_payload(r, {"x-payload-hash-ref": ref}, prefix=prefix)


def test_load_payload_is_size_bounded(r, mq_config) -> None:
    from mqcore.errors import PayloadRefRefusedError

    prefix = mq_config.keys.payload_prefix("orders-eu", 0)
    r.set(prefix + "big", json.dumps("y" * 5000))
    r.rpush(prefix + "list", "x")
    with pytest.raises(PayloadRefRefusedError, match="over 1000 bytes"):
        load_payload(r, {"x-payload-hash-ref": prefix + "big"}, prefix=prefix, max_bytes=1000)
    with pytest.raises(PayloadRefRefusedError, match="not a stored payload"):
        load_payload(r, {"x-payload-hash-ref": prefix + "list"}, prefix=prefix)
    assert load_payload(r, {"x-payload-hash-ref": prefix + "gone"}, prefix=prefix) is None
    assert load_payload(r, {"x-payload-hash-ref": prefix + "big"}, prefix=prefix) == "y" * 5000


def test_consumer_gets_no_payload_from_a_forged_reference(r, mq_config) -> None:
    """A refused reference is never handed to the handler (as empty or otherwise): the
    message is dead-lettered with the reason, and nothing of the other key is copied."""
    ref = _secret_ref(r, mq_config)
    Topics(mq_config).create("orders", 1)
    forged = _forged(r, mq_config, ref, topic="orders")
    seen: list[Message] = []
    lock = threading.Lock()

    def handler(m: Message) -> None:
        with lock:
            seen.append(m)

    dlq = mq_config.keys.dlq("orders")
    with running(Consumer(mq_config, "orders", handler, FAST)):
        wait_for(lambda: r.xlen(dlq) >= 1)
    assert seen == []
    [(_, letter)] = r.xrange(dlq)
    assert letter[b"originalMessageId"].decode() == forged
    headers = json.loads(letter[b"headers"])
    assert "refused" in headers["x-runtime-error-message"]
    assert headers["x-runtime-error-type"] == "PayloadMissing"
    assert b"card-4111" not in b"".join(letter.values())
    assert r.scard(mq_config.keys.payload_index("orders")) == 0  # nothing copied
