"""Issue 30: per-user rate limits (django-ratelimit over the console store) on browse, filter
and export endpoints (pages and API: 429 with Retry-After), and exports refused when the
browser says they came from another site (real redis-server)."""

from __future__ import annotations

import socket

import pytest
import redis
from django.test import Client, override_settings

from dashboard.models import ApiToken, AuditEvent, AuditPhase
from mqcore.config import MQConfig
from tests.integration.dlq_support import add_letters, make_topic, role_user

pytestmark = [pytest.mark.redis, pytest.mark.django_db]

T = "/clusters/default/topics/orders"
API = "/api/v1/clusters/default/topics/orders"
MSG = f"{API}/messages"  # the browser's API
NO_MATCH = 'key == "nope"'  # an expression filter


def login(name: str, role: str = "Viewer") -> Client:
    client = Client()
    client.force_login(role_user(name, role))
    return client


@pytest.fixture
def orders(r: redis.Redis, mq_config: MQConfig) -> None:
    make_topic(mq_config, "orders", 2)
    pipe = r.pipeline(transaction=False)
    for i in range(100):
        pipe.xadd(mq_config.keys.partition("orders", i % 2), {"payload": f'{{"n": {i}}}'})
    pipe.execute()


# --- rate limits ----------------------------------------------------------------------


@override_settings(RATELIMIT_BROWSE="3/m")
def test_browse_over_the_limit_answers_429_on_pages_and_api(
    orders: None, console_r: redis.Redis
) -> None:
    viewer = login("v")
    for _ in range(2):
        assert viewer.get(f"{T}/messages/").status_code == 200
    assert viewer.get(MSG).status_code == 200  # the page and the API share the count
    page = viewer.get(f"{T}/messages/")
    assert page.status_code == 429
    assert 1 <= int(page["Retry-After"]) <= 60
    assert b"Too many browse requests: at most 3 a minute per user" in page.content
    api = viewer.get(MSG)
    assert api.status_code == 429
    assert 1 <= int(api["Retry-After"]) <= 60
    assert api.json()["status"] == 429
    assert "RATELIMIT_BROWSE" in api.json()["error"]
    assert login("other").get(MSG).status_code == 200  # per user
    assert console_r.keys("opsdash:cache:ratelimit:*")  # counted in the console store


@override_settings(RATELIMIT_FILTER="2/m")
def test_filtered_requests_have_their_own_lower_limit(
    orders: None, r: redis.Redis, mq_config: MQConfig
) -> None:
    add_letters(r, mq_config, "orders", 3)
    viewer = login("v")
    assert viewer.get(MSG, {"where": NO_MATCH}).status_code == 200
    assert viewer.get(f"{T}/dlq/", {"text": "order"}).status_code == 200  # DLQ filter counts
    assert viewer.get(MSG, {"where": NO_MATCH}).status_code == 429
    assert viewer.get(f"{API}/retries", {"key": "k"}).status_code == 429  # retry browser too
    assert viewer.get(f"{T}/retries/", {"text": "x"}).status_code == 429
    assert viewer.get(f"{T}/dlq/", {"text": "order"}).status_code == 429
    assert viewer.get(MSG).status_code == 200  # unfiltered reads go on
    assert viewer.get(f"{T}/dlq/").status_code == 200
    assert viewer.get(f"{API}/retries").status_code == 200


@override_settings(RATELIMIT_EXPORT="2/m")
def test_exports_over_the_limit_answer_429_and_write_no_audit_row(orders: None) -> None:
    user = role_user("v", "Viewer")
    viewer = Client()
    viewer.force_login(user)
    assert viewer.get(f"{T}/lag/export/").status_code == 200
    _, token = ApiToken.issue(user, read_only=True)
    robot = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert robot.get(f"{API}/lag/export").status_code == 200
    audited = AuditEvent.objects.count()
    page = viewer.get(f"{T}/lag/export/")
    assert page.status_code == 429
    assert page["Retry-After"]
    api = robot.get(f"{API}/lag/export")
    assert api.status_code == 429
    assert "Too many exports" in api.json()["error"]
    assert AuditEvent.objects.count() == audited


def test_an_unreachable_console_store_does_not_take_the_browser_down(orders: None) -> None:
    with socket.socket() as sock:  # a local port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    caches = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
        "ratelimit": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{port}/1",
        },
    }
    with override_settings(CACHES=caches, RATELIMIT_BROWSE="1/m"):
        viewer = login("v")
        assert viewer.get(MSG).status_code == 200
        assert viewer.get(MSG).status_code == 200  # not counted: the limit is not applied


# --- exports from another site --------------------------------------------------------


@pytest.mark.parametrize("site", ["cross-site", "same-site"])
def test_an_export_from_another_site_is_refused_and_not_audited(orders: None, site: str) -> None:
    viewer = login("v")
    for url in (f"{T}/lag/export/", f"{API}/lag/export", f"{T}/dlq/export-all/"):
        resp = viewer.get(url, headers={"Sec-Fetch-Site": site})
        assert resp.status_code == 403, url
        assert b"another site" in resp.content
    assert not AuditEvent.objects.exists()


@override_settings(RATELIMIT_EXPORT="1/m")
def test_an_export_from_another_site_is_refused_before_it_counts_or_its_query_is_read(
    orders: None,
) -> None:
    viewer = login("v")
    for url in (f"{T}/pending/export/", f"{API}/pending/export"):
        lured = viewer.get(
            url, {"partition": "x", "max_rows": "-1"}, HTTP_SEC_FETCH_SITE="cross-site"
        )
        assert lured.status_code == 403, url
    assert viewer.get(f"{T}/lag/export/").status_code == 200  # the refusals did not count
    assert viewer.get(f"{T}/lag/export/").status_code == 429


def test_same_origin_and_typed_exports_go_on_and_are_audited(orders: None) -> None:
    viewer = login("v")
    for site in ("same-origin", "none"):
        resp = viewer.get(f"{T}/lag/export/", headers={"Sec-Fetch-Site": site})
        assert resp.status_code == 200
        b"".join(resp.streaming_content)
    intents = AuditEvent.objects.filter(event_type="lag.export", phase=AuditPhase.INTENT)
    assert intents.count() == 2
