"""Bounds on what one request may read: the text filter searches the first 64 KiB of a
payload and of each header value, a text-filtered bulk selection reads at most a byte
budget of letters (refused beyond, nothing frozen), and a message's payload comes cut to
``max_bytes`` with its full size."""

from __future__ import annotations

import pytest
import redis
from django.test import Client

from dashboard.models import ReplayJob
from mqcore.config import MQConfig
from mqcore.dlq import browse
from mqcore.dlq.browse import matching_ids
from mqcore.errors import InvalidArgumentError
from mqcore.producer import Producer
from mqcore.text_match import TEXT_MATCH_CHARS
from tests.integration.dlq_support import add_letters, make_topic, role_user

pytestmark = [pytest.mark.redis, pytest.mark.django_db]


def test_text_filter_searches_a_bounded_prefix(r: redis.Redis, mq_config: MQConfig) -> None:
    make_topic(mq_config, "orders", 1)
    far = "x" * TEXT_MATCH_CHARS + "needle"
    add_letters(r, mq_config, "orders", 2, partitions=1, payload=lambda i: far if i else "needle")
    kw = {"partition": None, "key": None, "since_ms": None, "until_ms": None, "max_ids": 10}
    got = matching_ids(r, mq_config.keys, "orders", text="needle", **kw)
    assert len(got) == 1  # the needle past 64 KiB is not searched


def test_text_filtered_bulk_selection_is_byte_bounded(
    r: redis.Redis, mq_config: MQConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_topic(mq_config, "orders", 1)
    add_letters(r, mq_config, "orders", 1_200, partitions=1)
    monkeypatch.setattr(browse, "BULK_TEXT_SCAN_BYTES", 50_000)
    kw = {"partition": None, "key": None, "since_ms": None, "until_ms": None, "max_ids": 5000}
    with pytest.raises(InvalidArgumentError, match="narrow it"):
        matching_ids(r, mq_config.keys, "orders", text="order", max_scan_bytes=50_000, **kw)
    assert len(matching_ids(r, mq_config.keys, "orders", text=None, **kw)) == 1_200
    client = Client()
    client.force_login(role_user("olga", "Operator"))
    resp = client.post("/clusters/default/topics/orders/dlq/bulk/",
                       {"all": "1", "text": "order"})  # fmt: skip
    assert resp.status_code == 400
    assert b"narrow it" in resp.content
    assert not ReplayJob.objects.exists()


def test_message_api_cuts_the_payload_to_max_bytes(r: redis.Redis, mq_config: MQConfig) -> None:
    make_topic(mq_config, "orders", 1)
    payload = "é" * 50_000  # 100,000 bytes of UTF-8
    entry = Producer(mq_config).send("orders", payload, partition=0).id
    client = Client()
    client.force_login(role_user("vic", "Viewer"))
    url = f"/api/v1/clusters/default/topics/orders/messages/0/{entry}"
    got = client.get(url).json()
    assert (got["payload_size"], got["payload_truncated"]) == (100_000, True)
    assert got["payload"] == "é" * 32_768  # 64 KiB, cut on a character boundary
    odd = client.get(url + "?max_bytes=3").json()
    assert odd["payload"] == "é"
    whole = client.get(url + "?max_bytes=4194304").json()
    assert (whole["payload"] == payload, whole["payload_truncated"]) == (True, False)
    assert client.get(url + "?max_bytes=0").status_code == 400
    assert client.get(url + "?max_bytes=99999999").status_code == 400
    page = client.get(f"/clusters/default/topics/orders/messages/0/{entry}/").content.decode()
    assert "100,000 bytes: the first 65,536 bytes shown" in page
