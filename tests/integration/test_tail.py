"""The live tail (page, htmx poll and API twin) on a real redis-server: it opens at the
newest entries and shows what arrives after its cursor, newest first, filtered and masked
as the browser's; a rate cap with a skipped count; pause hands the cursor back unread;
hostile bytes escaped; a malformed cursor is a 400; the browser's permissions and scopes."""

from __future__ import annotations

import json
import time

import pytest
import redis
from django.test import Client, override_settings

from dashboard.masking import MASK
from dashboard.models import SensitiveTopic
from mqcore.admin import Admin
from mqcore.browse import Filters
from mqcore.browse.tail import tail_topic
from mqcore.config import MQConfig
from mqcore.cursor import pack_cursor
from mqcore.producer import Producer
from tests.integration.dlq_support import make_topic, role_user, scoped_viewer

pytestmark = [pytest.mark.redis, pytest.mark.django_db]

PAGE = "/clusters/default/topics/orders/tail/"
API = "/api/v1/clusters/default/topics/orders/tail"
XSS = "<script>alert(1)</script>"


@pytest.fixture
def orders(r: redis.Redis, mq_config: MQConfig) -> MQConfig:
    make_topic(mq_config, "orders", 2)
    send(r, mq_config, range(3))  # before the tail opens: never shown
    return mq_config


def send(r: redis.Redis, cfg: MQConfig, numbers: range, **extra: str) -> None:
    with Producer(cfg, r) as producer:
        for i in numbers:
            payload = json.dumps({"customer": f"c-{i % 2}", "amount": i * 40, **extra})
            producer.send("orders", payload, key=f"k{i}", headers={"x-n": str(i)}, partition=i % 2)
            time.sleep(0.002)  # one millisecond each: the merge by id is the send order


def client(role: str | None, name: str | None = None) -> Client:
    c = Client()
    c.force_login(role_user(name or (role or "nobody").lower(), role))
    return c


def keys_of(data: dict) -> list[str]:  # type: ignore[type-arg]
    return [m["key"] for m in data["messages"]]


def test_tail_opens_at_now_and_shows_what_arrives_newest_first(
    r: redis.Redis, orders: MQConfig
) -> None:
    viewer = client("Viewer")
    opened = viewer.get(API).json()
    assert opened["messages"] == []
    assert opened["partitions"] == [0, 1]
    assert (opened["skipped"], opened["shown_total"], opened["rate"]) == (0, 0, 50)
    send(r, orders, range(3, 7))
    poll = viewer.get(API, {"cursor": opened["cursor"]}).json()
    assert keys_of(poll) == ["k6", "k5", "k4", "k3"]
    assert (poll["skipped"], poll["shown_total"], poll["examined"]) == (0, 4, 4)
    assert poll["messages"][0]["headers"]["x-n"] == "6"
    again = viewer.get(API, {"cursor": poll["cursor"]}).json()
    assert again["messages"] == []
    assert again["shown_total"] == 4
    one = viewer.get(API, {"partition": 1}).json()
    send(r, orders, range(7, 10))
    assert keys_of(viewer.get(API, {"partition": 1, "cursor": one["cursor"]}).json()) == [
        "k9",
        "k7",
    ]


def test_filters_apply_as_in_the_browser(r: redis.Redis, orders: MQConfig) -> None:
    viewer = client("Viewer")
    cursor = viewer.get(API).json()["cursor"]
    send(r, orders, range(3, 9))

    def tail(**params: str) -> list[str]:
        return keys_of(viewer.get(API, {"cursor": cursor, **params}).json())

    assert tail(key="k4") == ["k4"]
    assert tail(header="x-n=5") == ["k5"]
    assert tail(text="C-1") == ["k7", "k5", "k3"]
    assert tail(where='payload.customer == "c-0" and payload.amount > 200') == ["k8", "k6"]
    filtered = viewer.get(API, {"cursor": cursor, "key": "k4"}).json()
    assert (filtered["examined"], filtered["skipped"]) == (6, 0)  # looked at, not skipped


def test_rate_cap_shows_the_newest_and_counts_the_rest(r: redis.Redis, orders: MQConfig) -> None:
    viewer = client("Viewer")
    cursor = viewer.get(API, {"rate": 3}).json()["cursor"]
    send(r, orders, range(3, 13))
    poll = viewer.get(API, {"rate": 3, "cursor": cursor}).json()
    assert keys_of(poll) == ["k12", "k11", "k10"]
    assert (poll["skipped"], poll["skipped_total"], poll["shown_total"]) == (7, 7, 3)
    assert viewer.get(API, {"rate": 1001}).status_code == 400
    assert viewer.get(API, {"rate": 0}).status_code == 400


def test_the_allowance_refills_at_the_rate_and_holds_one_second(
    r: redis.Redis, orders: MQConfig
) -> None:
    admin = Admin(orders, r)
    opened = tail_topic(admin, "orders", rate=4, at_ms=1_000_000)
    send(r, orders, range(3, 9))
    first = tail_topic(admin, "orders", cursor=opened.cursor, rate=4, at_ms=1_000_000)
    assert [m.key for m in first.messages] == ["k8", "k7", "k6", "k5"]
    assert first.skipped == 2
    send(r, orders, range(9, 13))
    half = tail_topic(admin, "orders", cursor=first.cursor, rate=4, at_ms=1_000_500)
    assert [m.key for m in half.messages] == ["k12", "k11"]  # half a second: 2 of 4
    assert (half.skipped, half.state.skipped, half.state.shown) == (2, 4, 6)
    send(r, orders, range(13, 23))
    later = tail_topic(admin, "orders", cursor=half.cursor, rate=4, at_ms=1_060_000)
    assert len(later.messages) == 4  # a minute later: still one second's worth
    assert later.skipped == 6
    keyed = tail_topic(
        admin, "orders", cursor=later.cursor, rate=4, filters=Filters.of(key="k1"), at_ms=1_061_000
    )
    assert keyed.messages == []
    assert keyed.examined == 0


def test_pause_hands_the_cursor_back_unread_and_resume_goes_on(
    r: redis.Redis, orders: MQConfig
) -> None:
    viewer = client("Viewer")
    cursor = viewer.get(API).json()["cursor"]
    send(r, orders, range(3, 5))
    paused = viewer.get(API, {"cursor": cursor, "paused": "1"}).json()
    assert paused["messages"] == []
    assert paused["paused"] is True
    assert paused["cursor"] == cursor
    resumed = viewer.get(API, {"cursor": paused["cursor"]}).json()
    assert keys_of(resumed) == ["k4", "k3"]


def test_masked_topic_masks_rows_and_refuses_data_filters(r: redis.Redis, orders: MQConfig) -> None:
    SensitiveTopic.objects.create(pattern="orders")
    viewer = client("Viewer")
    cursor = viewer.get(API).json()["cursor"]
    send(r, orders, range(3, 5))
    data = viewer.get(API, {"cursor": cursor}).json()
    assert data["payload_masked"] is True
    assert {m["payload"] for m in data["messages"]} == {MASK}
    assert {v for m in data["messages"] for v in m["headers"].values()} == {MASK}
    for params in ({"text": "c-1"}, {"where": "payload.amount > 1"}, {"header": "x-n=1"}):
        assert viewer.get(API, {"cursor": cursor, **params}).status_code == 400, params
    assert keys_of(viewer.get(API, {"cursor": cursor, "key": "k3"}).json()) == ["k3"]
    operator = client("Operator")
    assert json.loads(operator.get(API, {"cursor": cursor}).json()["messages"][0]["payload"])


def test_hostile_bytes_are_escaped_on_the_page_and_data_in_the_api(
    r: redis.Redis, orders: MQConfig
) -> None:
    viewer = client("Viewer")
    page = viewer.get(PAGE)
    assert page.status_code == 200
    body = page.content.decode()
    cursor = viewer.get(API).json()["cursor"]
    assert 'id="tail-poller"' in body
    assert 'hx-trigger="every 1s"' in body
    key = orders.keys.partition("orders", 0)
    r.xadd(
        key, {"payload": XSS.encode() + b"\xff\xfe", "key": XSS, "headers": f'{{"{XSS}":"{XSS}"}}'}
    )
    r.xadd(key, {"payload": b"\xff\x00\x01" * 50, "key": b"\xc3\x28"})
    polled = viewer.get(PAGE, {"cursor": cursor}, HTTP_HX_REQUEST="true")
    assert polled.status_code == 200
    html = polled.content.decode()
    assert XSS not in html
    assert "&lt;script&gt;" in html
    assert html.count('class="tail-row"') == 2
    assert 'hx-swap-oob="true"' in html
    assert "binary, 150 bytes" in html
    rows = viewer.get(API, {"cursor": cursor}).json()["messages"]
    assert rows[1]["key"] == XSS
    assert rows[0]["payload_hex"] == "ff0001" * 50


def test_malformed_cursors_are_400_and_stop_the_page(orders: MQConfig) -> None:
    viewer = client("Viewer")
    browse_cursor = viewer.get("/api/v1/clusters/default/topics/orders/messages", {"limit": 1})
    forged = {"v": 1, "k": "tail", "t": 1, "a": 1, "n": 0, "s": 0, "e": 0}
    bad = [
        "nope",
        "!!!",
        "x" * 70_000,
        browse_cursor.json()["next_cursor"],
        pack_cursor({**forged, "p": {"7": ["1-0", 1]}}),  # another topic's partitions
        pack_cursor({**forged, "p": {"0": ["1-x", 1]}}),
        pack_cursor({**forged, "p": {"0": ["1-0", -1]}}),
        pack_cursor({**forged, "p": {"0": ["1-0", 1]}, "a": "lots"}),
        pack_cursor([1, 2]),
    ]
    for cursor in bad:
        resp = viewer.get(API, {"cursor": cursor})
        assert resp.status_code == 400, cursor
        assert "cursor" in resp.json()["error"]
        page = viewer.get(PAGE, {"cursor": cursor})
        assert page.status_code == 400
        assert b'id="tail-error"' in page.content
        polled = viewer.get(PAGE, {"cursor": cursor}, HTTP_HX_REQUEST="true")
        assert polled.status_code == 200
        assert b'id="tail-stopped"' in polled.content
        assert b"hx-trigger" not in polled.content
    fine = pack_cursor({**forged, "p": {"0": ["1-0", 1]}, "a": -5})  # clamped, still a cursor
    assert viewer.get(API, {"cursor": fine}).status_code == 200
    assert viewer.get(API, {"where": "payload.a = 1"}).status_code == 400


def test_permissions_are_the_browsers(orders: MQConfig) -> None:
    assert client(None).get(API).status_code == 403
    assert client(None, "nobody2").get(PAGE).status_code == 403
    assert Client().get(API).status_code == 401
    make_topic(orders, "payments", 1)
    c = scoped_viewer("payments", "payments*")
    assert c.get(API).status_code in (403, 404)
    assert c.get(PAGE).status_code in (403, 404)
    assert c.get("/api/v1/clusters/default/topics/payments/tail").status_code == 200
    assert client("Viewer").get("/api/v1/clusters/default/topics/nope/tail").status_code == 404


def test_the_browser_links_to_the_tail_with_its_filters(orders: MQConfig) -> None:
    body = client("Viewer").get("/clusters/default/topics/orders/messages/", {"key": "k1"})
    assert b'id="tail-link"' in body.content
    assert b"/clusters/default/topics/orders/tail/?key=k1" in body.content


@override_settings(RATELIMIT_TAIL="3/m", RATELIMIT_BROWSE="1/m", RATELIMIT_FILTER="1/m")
def test_polls_count_in_their_own_rate_limit(orders: MQConfig, console_r: redis.Redis) -> None:
    viewer = client("Viewer")
    cursor = viewer.get(API, {"key": "k1"}).json()["cursor"]  # not the browser's limits
    assert viewer.get(API, {"key": "k1", "cursor": cursor}).status_code == 200
    assert viewer.get(PAGE, {"cursor": cursor}).status_code == 200
    refused = viewer.get(API, {"cursor": cursor})
    assert refused.status_code == 429
    assert "RATELIMIT_TAIL" in refused.json()["error"]


def test_a_payload_over_the_decode_cap_is_not_decoded(r: redis.Redis, orders: MQConfig) -> None:
    operator = client("Operator")
    cursor = operator.get(API).json()["cursor"]
    body = json.dumps({"items": ["y" * 100] * 20_000})  # 2 MB, over the 1 MiB decode cap
    r.xadd(orders.keys.partition("orders", 0), {"payload": body, "key": "big"})
    row = operator.get(API, {"cursor": cursor}).json()["messages"][0]
    assert row["payload"] == ""
    assert row["payload_undecoded"]["reason"] == "too_large"
    assert row["payload_undecoded"]["size"] == len(body)
    polled = operator.get(PAGE, {"cursor": cursor}, HTTP_HX_REQUEST="true")
    assert b"too large" in polled.content
    assert len(polled.content) < 20_000
