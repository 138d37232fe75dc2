"""The retry browser in the console: pages and API twins, retry now and delete (Operator,
audited, idempotent), masking of sensitive topics, topic scopes, bad input (real Redis)."""

from __future__ import annotations

import json

import pytest
import redis
from django.contrib.auth.models import Group
from django.test import Client

from dashboard.masking import MASK
from dashboard.models import AuditEvent, AuditEventType, GroupTopicScope, SensitiveTopic
from mqcore.clock import now_ms
from mqcore.config import MQConfig
from tests.integration.dlq_support import make_topic, role_user
from tests.integration.pages_support import collect
from tests.integration.retry_items import schedule

pytestmark = [pytest.mark.redis, pytest.mark.django_db]

PAGE = "/clusters/default/topics/orders/retries/"
API = "/api/v1/clusters/default/topics/orders/retries"
SECRET = "4111111111111111"


@pytest.fixture
def items(r: redis.Redis, mq_config: MQConfig) -> list[str]:
    """Three due items (k0, k1, k0), two scheduled ones; returns ids in due order."""
    make_topic(mq_config, "orders", 2)
    now = now_ms()
    ids = []
    for i in range(5):
        due = now - 60_000 + i if i < 3 else now + 3_600_000 + i
        member = schedule(
            r, mq_config.keys, "orders", i % 2, f"<b>order {i}</b> {SECRET}", due_ms=due,
            key=f"k{i % 2 if i < 3 else 9}", retry_count=i + 1,
        )  # fmt: skip
        r.hset(member, "headers", json.dumps({"x-runtime-error-message": f"<i>boom {i}</i>"}))
        ids.append(member.rsplit(":", 1)[1])
    return ids


def _client(role: str | None, name: str) -> Client:
    client = Client()
    client.force_login(role_user(name, role))
    return client


def test_page_and_api_list_filter_and_page(items: list[str]) -> None:
    client = _client("Viewer", "vic")
    html = client.get(PAGE).content.decode()
    assert "5 items in the retry set" in html
    assert "3 due now" in html
    assert "&lt;b&gt;order 0&lt;/b&gt;" in html  # escaped, never markup
    assert "<b>order 0</b>" not in html
    assert "&lt;i&gt;boom 0&lt;/i&gt;" in html
    assert "Retry now" not in html  # a Viewer cannot act
    api = client.get(API + "?state=due&limit=2").json()
    assert [i["id"] for i in api["items"]] == items[:2]
    row = api["items"][0]
    assert row["error_headers"] == {"x-runtime-error-message": "<i>boom 0</i>"}
    assert (row["retry_count"], row["partition"], row["key"], row["due"]) == (1, 0, "k0", True)
    nxt = client.get(API, {"state": "due", "limit": 2, "cursor": api["next_cursor"]}).json()
    assert [i["id"] for i in nxt["items"]] == items[2:3]
    assert nxt["next_cursor"] is None
    sched = client.get(API + "?state=scheduled&order=desc").json()
    assert [i["id"] for i in sched["items"]] == items[:2:-1]
    assert [i["id"] for i in client.get(API + "?key=k0").json()["items"]] == [items[0], items[2]]
    assert [i["id"] for i in client.get(API + "?text=ORDER 4").json()["items"]] == [items[4]]
    part = client.get(PAGE + "?state=scheduled", HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in part
    assert 'id="retries-list"' in part
    for bad in ("state=soon", "order=up", "limit=0", "partition=x", "cursor=zz", "key=k&offset=2"):
        assert client.get(f"{API}?{bad}").status_code == 400, bad
        assert client.get(f"{PAGE}?{bad}").status_code == 400, bad
    assert client.get("/api/v1/clusters/default/topics/ghost/retries").status_code == 404


def test_index_lists_visible_topics_with_counts(items: list[str], mq_config: MQConfig) -> None:
    make_topic(mq_config, "payments", 1)
    collect()
    client = _client("Viewer", "vic")
    api = client.get("/api/v1/clusters/default/retries").json()
    assert [(t["topic"], t["count"]) for t in api["topics"]] == [("orders", 5), ("payments", 0)]
    html = client.get("/clusters/default/retries/").content.decode()
    assert PAGE in html
    group = Group.objects.create(name="payments-only")
    group.permissions.set(Group.objects.get(name="Operator").permissions.all())
    GroupTopicScope.objects.create(group=group, cluster="default", pattern="payments")
    scoped = role_user("scoped", None)
    scoped.groups.add(group)
    other = Client()
    other.force_login(scoped)
    topics = other.get("/api/v1/clusters/default/retries").json()["topics"]
    assert [t["topic"] for t in topics] == ["payments"]
    assert other.get(API).status_code in (403, 404)  # as every read of an unseen topic
    assert other.get(PAGE).status_code in (403, 404)
    resp = other.post(API + "/delete", {"ids": [items[0]], "reason": "x"}, "application/json")
    assert resp.status_code in (403, 404)
    assert not AuditEvent.objects.exclude(event_type=AuditEventType.ACCESS_DENIED).exists()


def test_retry_now_and_delete_are_audited_and_idempotent(
    items: list[str], r: redis.Redis, mq_config: MQConfig
) -> None:
    client = _client("Operator", "olga")
    resp = client.post(PAGE + "retry/", {"one": items[3], "state": "scheduled"})
    assert resp.status_code == 302
    assert resp["Location"].endswith("?state=scheduled")
    assert r.xlen(mq_config.keys.partition("orders", 1)) == 1
    again = client.post(API + "/retry", {"ids": [items[3]]}, "application/json").json()
    assert (again["retried"], again["missing"]) == (0, 1)
    assert r.xlen(mq_config.keys.partition("orders", 1)) == 1
    refused = client.post(API + "/delete", {"ids": [items[0]]}, "application/json")
    assert refused.status_code == 400  # a reason is required to delete
    done = client.post(
        API + "/delete", {"ids": [items[0], items[1]], "reason": "bad data"}, "application/json"
    ).json()
    assert (done["deleted"], done["missing"]) == (2, 0)
    no_confirm = client.post(
        API + "/delete",
        {"all_matching": True, "filter": {"state": "due"}, "reason": "r"},
        "application/json",
    )
    assert no_confirm.status_code == 400
    rest = client.post(
        PAGE + "delete/",
        {"all_matching": "1", "state": "due", "reason": "cleanup", "confirm": "orders"},
    )
    assert rest.status_code == 302
    assert r.zcard(mq_config.keys.retry_zset("orders")) == 1  # items[4], scheduled
    rows = AuditEvent.objects.filter(event_type=AuditEventType.RETRY_DELETE, phase="outcome")
    assert sorted(e.counts["deleted"] for e in rows) == [1, 2]
    retried = AuditEvent.objects.filter(event_type=AuditEventType.RETRY_NOW, phase="intent")
    assert [e.letter_ids for e in retried] == [[items[3]], [items[3]]]


def test_bad_input_writes_nothing(items: list[str], r: redis.Redis, mq_config: MQConfig) -> None:
    client = _client("Operator", "olga")
    bodies = [
        {"ids": ["../etc"], "reason": "r"},
        {"ids": [items[0], "a b"], "reason": "r"},
        {"ids": []},
        {"ids": "abc"},
        {"ids": [items[0]], "all_matching": True, "reason": "r"},
        {"all_matching": True, "filter": {"state": "soon"}, "reason": "r"},
        {"all_matching": True, "filter": [], "reason": "r"},
        {"all_matching": True, "cursor": "zz", "reason": "r", "confirm": "orders"},
        {"ids": [items[0]] * 2 + [f"x{i}" for i in range(1001)], "reason": "r"},
    ]
    for body in bodies:
        for action in ("retry", "delete"):
            resp = client.post(f"{API}/{action}", body, "application/json")
            assert resp.status_code == 400, (action, body)
    ghost = client.post("/api/v1/clusters/default/topics/ghost/retries/retry", {"ids": ["a"]},
                        "application/json")  # fmt: skip
    assert ghost.status_code == 404
    assert client.post(PAGE + "retry/", {"ids": ["a/b"]}).status_code == 400
    assert r.zcard(mq_config.keys.retry_zset("orders")) == 5
    assert r.xlen(mq_config.keys.partition("orders", 0)) == 0
    assert AuditEvent.objects.count() == 0


def test_sensitive_topic_is_masked_and_text_search_refused(items: list[str]) -> None:
    SensitiveTopic.objects.create(pattern="orders")
    viewer = _client("Viewer", "vic")
    api = viewer.get(API).json()
    assert api["masked"] is True
    assert {i["payload"] for i in api["items"]} == {MASK}
    assert api["items"][0]["error_headers"] == {"x-runtime-error-message": MASK}
    assert SECRET not in json.dumps(api)
    html = viewer.get(PAGE).content.decode()
    assert SECRET not in html
    assert "boom" not in html
    assert viewer.get(API + "?text=4111").status_code == 400
    operator = _client("Operator", "olga")  # view_payload: sees the data
    assert SECRET in operator.get(API).json()["items"][0]["payload"]


def test_write_filter_reads_as_the_list(
    items: list[str], r: redis.Redis, mq_config: MQConfig
) -> None:
    """A write's ``filter`` is read by the list's own declaration: partition 0 is a filter
    (not "none"), a number sent as text counts, and what the list refuses is refused."""
    client = _client("Operator", "olga")
    listed = client.get(API + "?state=due&partition=0").json()["items"]
    assert [i["id"] for i in listed] == [items[0], items[2]]
    for bad in ({"state": "soon"}, {"partition": "x"}, {"partition": -1}, {"order": "up"}):
        body = {"all_matching": True, "filter": bad, "reason": "r"}
        assert client.post(API + "/retry", body, "application/json").status_code == 400, bad
    assert AuditEvent.objects.count() == 0
    body = {"all_matching": True, "filter": {"state": "due", "partition": 0}, "reason": "r"}
    done = client.post(API + "/retry", body, "application/json").json()
    assert done["retried"] == 2
    assert r.xlen(mq_config.keys.partition("orders", 0)) == 2
    body["filter"] = {"state": "due", "partition": "1"}
    assert client.post(API + "/retry", body, "application/json").json()["retried"] == 1
    assert r.xlen(mq_config.keys.partition("orders", 1)) == 1
