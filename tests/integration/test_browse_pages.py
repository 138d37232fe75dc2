"""The browser page and its API twin, produce a test message (page + API), and the message
page's trace, through the Django test client on a real redis-server: filters, paging,
errors (400, never 500), masking, topic scope, roles, audit, escaping."""

from __future__ import annotations

import json
import time

import pytest
import redis
from django.test import Client

from dashboard.masking import MASK
from dashboard.models import AuditEvent, SensitiveTopic
from mqcore.config import MQConfig
from mqcore.producer import Producer
from tests.integration.dlq_support import make_topic, role_user, scoped_viewer

pytestmark = [pytest.mark.redis, pytest.mark.django_db]

PAGE = "/clusters/default/topics/orders/messages/"
API = "/api/v1/clusters/default/topics/orders/messages"
XSS = "<script>alert(1)</script>"


@pytest.fixture
def orders(r: redis.Redis, mq_config: MQConfig) -> list[str]:
    make_topic(mq_config, "orders", 2)
    ids = []
    with Producer(mq_config, r) as producer:
        for i in range(8):
            payload = json.dumps({"customer": f"c-{i % 2}", "amount": i * 40, "note": XSS})
            sent = producer.send(
                "orders", payload, key=f"k{i}", headers={"x-n": str(i), "x-tag": XSS},
                partition=i % 2,
            )  # fmt: skip
            ids.append(sent.id)
            time.sleep(0.002)  # one millisecond each: the merge by id is the send order
    return ids


def client(role: str, name: str | None = None) -> Client:
    c = Client()
    c.force_login(role_user(name or role.lower(), role))
    return c


def keys_of(data: dict) -> list[str]:  # type: ignore[type-arg]
    return [m["key"] for m in data["messages"]]


def test_api_browse_filters_and_paging(orders: list[str]) -> None:
    viewer = client("Viewer")
    first = viewer.get(API, {"limit": 3}).json()
    assert keys_of(first) == ["k7", "k6", "k5"]
    assert first["scanned"] == 3
    assert first["payload_masked"] is False
    second = viewer.get(API, {"limit": 3, "cursor": first["next_cursor"]}).json()
    assert keys_of(second) == ["k4", "k3", "k2"]
    where = viewer.get(API, {"where": 'payload.customer == "c-1" and payload.amount > 100'})
    assert keys_of(where.json()) == ["k7", "k5", "k3"]
    assert keys_of(viewer.get(API, {"header": "x-n=2"}).json()) == ["k2"]
    assert keys_of(viewer.get(API, {"key": "k4"}).json()) == ["k4"]
    assert keys_of(viewer.get(API, {"text": "C-0", "partition": 0, "order": "oldest"}).json()) == [
        "k0", "k2", "k4", "k6",
    ]  # fmt: skip
    bound = viewer.get(API, {"key": "k0", "max_scan": 3}).json()
    assert bound["stopped_at_bound"] is True
    assert bound["scanned"] == 3
    cut = viewer.get(API, {"limit": 1, "max_bytes": 4}).json()["messages"][0]
    assert cut["payload"] == '{"cu'
    assert cut["payload_truncated"] is True


@pytest.mark.parametrize(
    ("params", "needle"),
    [
        ({"where": 'payload.customer = "c-1"'}, "=="),
        ({"where": "payload.amount >"}, "expected a value"),
        ({"order": "up"}, "order"),
        ({"limit": "0"}, "limit"),
        ({"max_scan": "1000001"}, "max_scan"),
        ({"from_time": "yesterday"}, "start time"),
        ({"from_id": "x"}, "invalid stream id"),
        ({"cursor": "abc"}, "cursor"),
        ({"max_bytes": "0"}, "max_bytes"),
        ({"header": "=v"}, "header"),
    ],
)
def test_bad_queries_are_400_on_the_api_and_the_page(
    orders: list[str], params: dict[str, str], needle: str
) -> None:
    viewer = client("Viewer")
    resp = viewer.get(API, params)
    assert resp.status_code == 400
    assert needle in json.dumps(resp.json())
    page = viewer.get(PAGE, params)
    assert page.status_code == 400
    assert b'id="browse-error"' in page.content


def test_unknown_topic_and_partition_are_404(orders: list[str]) -> None:
    viewer = client("Viewer")
    assert viewer.get("/api/v1/clusters/default/topics/nope/messages").status_code == 404
    assert viewer.get(API, {"partition": 5}).status_code == 404


def test_page_lists_escaped_rows_with_links_and_next(orders: list[str]) -> None:
    viewer = client("Viewer")
    body = viewer.get(PAGE, {"limit": 2, "where": "payload.amount >= 0"}).content.decode()
    assert f'/messages/1/{orders[7]}/"' in body
    assert XSS not in body
    assert "&lt;script&gt;" in body
    assert 'id="browse-next"' in body
    assert "scanned 2 entries" in body
    assert 'id="produce-form"' not in body  # a Viewer gets no produce form


def test_masked_topic_hides_payloads_and_refuses_data_filters(orders: list[str]) -> None:
    SensitiveTopic.objects.create(pattern="orders")
    viewer = client("Viewer")
    data = viewer.get(API).json()
    assert data["payload_masked"] is True
    assert {m["payload"] for m in data["messages"]} == {MASK}
    assert {v for m in data["messages"] for v in m["headers"].values()} == {MASK}
    for params in ({"text": "c-1"}, {"where": 'payload.customer == "c-1"'}, {"header": "x-n=1"},
                   {"where": 'headers.x-n == "1"'}):  # fmt: skip
        assert viewer.get(API, params).status_code == 400, params
    assert keys_of(viewer.get(API, {"key": "k1"}).json()) == ["k1"]  # the key is not masked
    assert keys_of(viewer.get(API, {"header": "x-n", "limit": 1}).json()) == ["k7"]
    operator = client("Operator")
    assert json.loads(operator.get(API, {"limit": 1}).json()["messages"][0]["payload"])


def test_scoped_user_sees_only_their_topics(orders: list[str], mq_config: MQConfig) -> None:
    make_topic(mq_config, "payments", 1)
    c = scoped_viewer("payments", "payments*")
    assert c.get(API).status_code in (403, 404)
    assert c.get(PAGE).status_code in (403, 404)
    assert c.get("/api/v1/clusters/default/topics/payments/messages").status_code == 200


def test_produce_page_and_api_operator_only_validated_and_audited(
    orders: list[str], r: redis.Redis, mq_config: MQConfig
) -> None:
    url = PAGE + "produce/"
    viewer = client("Viewer")
    assert viewer.post(url, {"payload": "x"}).status_code == 403
    operator = client("Operator")
    resp = operator.post(
        url, {"payload": '{"test": true}', "key": "kk", "headers": "a=1\n\nb=two", "partition": "1"}
    )
    assert resp.status_code == 302
    new_id = resp["Location"].rstrip("/").split("/")[-1]
    assert resp["Location"].endswith(f"/messages/1/{new_id}/")
    stored = r.xrange(mq_config.keys.partition("orders", 1), new_id, new_id)[0][1]
    assert stored[b"key"] == b"kk"
    assert json.loads(stored[b"headers"])["b"] == "two"
    before = r.xlen(mq_config.keys.partition("orders", 0)) + r.xlen(
        mq_config.keys.partition("orders", 1)
    )
    bad_forms = (
        {"payload": ""},
        {"payload": "x", "partition": "9"},
        {"payload": "x", "headers": "novalue"},
        {"payload": "x", "partition": "a"},
    )
    for bad in bad_forms:
        page = operator.post(url, bad)
        assert page.status_code == 400, bad
        assert b'id="produce-error"' in page.content
    after = r.xlen(mq_config.keys.partition("orders", 0)) + r.xlen(
        mq_config.keys.partition("orders", 1)
    )
    assert after == before  # bad input wrote nothing
    api = operator.post(
        API + "/produce",
        json.dumps({"payload": "hi", "key": "k1", "headers": {"h": "v"}}),
        content_type="application/json",
    )
    assert api.status_code == 201
    assert set(api.json()) == {"topic", "partition", "id"}
    bad = operator.post(API + "/produce", json.dumps({"payload": "x", "headers": ["h"]}),
                        content_type="application/json")  # fmt: skip
    assert bad.status_code == 400
    assert viewer.post(API + "/produce", "{}", content_type="application/json").status_code == 403
    rows = AuditEvent.objects.filter(event_type="message.produce").order_by("id")
    outcomes = [row for row in rows if row.phase == "outcome" and row.outcome == "produced"]
    assert len(outcomes) == 2
    intent = rows.filter(phase="intent").first()
    assert intent is not None
    assert intent.detail["key"] == "kk"
    assert intent.detail["header_names"] == ["a", "b"]
    assert "test" not in json.dumps(intent.detail)  # never the payload


def test_message_page_and_api_show_the_trace(
    orders: list[str], r: redis.Redis, mq_config: MQConfig
) -> None:
    key = mq_config.keys.partition("orders", 0)
    r.xreadgroup("default-group", "worker-1", {key: ">"}, count=1)
    viewer = client("Viewer")
    api = viewer.get(f"/api/v1/clusters/default/topics/orders/messages/0/{orders[0]}").json()
    states = {g["group"]: g for g in api["trace"]["groups"]}
    assert states["default-group"]["state"] == "pending"
    assert states["default-group"]["consumer"] == "worker-1"
    other = viewer.get(f"/api/v1/clusters/default/topics/orders/messages/0/{orders[2]}").json()
    assert other["trace"]["groups"][0]["state"] == "not_delivered"
    page = viewer.get(f"/clusters/default/topics/orders/messages/0/{orders[0]}/").content.decode()
    assert 'id="delivery-table"' in page
    assert 'data-state="pending"' in page
    assert "Not in the DLQ." in page


def test_odd_retry_fields_never_break_the_message_page(
    orders: list[str], r: redis.Redis, mq_config: MQConfig
) -> None:
    key = mq_config.keys.partition("orders", 0)
    headers = json.dumps({"x-original-message-id": "../x/<b>", "partitionId": "0"})
    odd = r.xadd(key, {"payload": "x", "originalMessageId": "a/b", "headers": headers}).decode()
    retry = {"originalMessageId": odd, "retryCount": "many", "headers": headers}
    r.xadd(key, {"payload": "y", **retry})
    viewer = client("Viewer")
    page = viewer.get(f"/clusters/default/topics/orders/messages/0/{odd}/")
    assert page.status_code == 200
    assert b'id="retry-of"' not in page.content
    api = viewer.get(f"/api/v1/clusters/default/topics/orders/messages/0/{odd}").json()
    assert api["trace"]["root_id"] == odd
    assert api["trace"]["previous_id"] is None
    assert api["trace"]["retries"][0]["retry_count"] == 0


def test_produce_refuses_what_the_producer_refuses_before_any_audit_row(
    orders: list[str], r: redis.Redis, mq_config: MQConfig
) -> None:
    """A payload over the limit, an empty header name, text that is not valid: 400, and
    neither a message nor an audit row is written (bad input writes nothing)."""
    operator = client("Operator")
    api = API + "/produce"
    events = AuditEvent.objects.count()
    lengths = [r.xlen(mq_config.keys.partition("orders", p)) for p in (0, 1)]
    for body in (
        {"payload": "x" * (mq_config.max_payload_bytes + 1)},
        {"payload": "x", "headers": {"": "1"}},
        {"payload": "\ud800"},
        {"payload": "x", "key": "\udfff"},
    ):
        resp = operator.post(api, json.dumps(body), content_type="application/json")
        assert resp.status_code == 400, (str(body)[:60], resp.content[:200])
    page = operator.post(PAGE + "produce/", {"payload": "x", "headers": "=v"})
    assert page.status_code == 400
    assert AuditEvent.objects.count() == events
    assert [r.xlen(mq_config.keys.partition("orders", p)) for p in (0, 1)] == lengths
