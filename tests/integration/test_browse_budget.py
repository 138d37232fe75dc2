"""Issue 30: a "where" expression's CPU budget lowers the browser's scan (counted in
entries scanned, not time), the page and the API say so, and the cursor goes on
(real redis-server)."""

from __future__ import annotations

import pytest
import redis
from django.test import Client, override_settings

from mqcore.browse import Filters, compile_expression
from mqcore.config import MQConfig
from tests.integration.dlq_support import make_topic, role_user

pytestmark = [pytest.mark.redis, pytest.mark.django_db]

T = "/clusters/default/topics/orders"
MSG = "/api/v1/clusters/default/topics/orders/messages"
NO_MATCH = 'key == "nope" or key == "none"'  # two terms: each entry costs 3 evaluations


@pytest.fixture
def orders(r: redis.Redis, mq_config: MQConfig) -> None:
    make_topic(mq_config, "orders", 2)
    pipe = r.pipeline(transaction=False)
    for i in range(100):
        pipe.xadd(mq_config.keys.partition("orders", i % 2), {"payload": f'{{"n": {i}}}'})
    pipe.execute()


def login(name: str) -> Client:
    client = Client()
    client.force_login(role_user(name, "Viewer"))
    return client


def test_terms_count_the_nodes_of_an_expression() -> None:
    assert compile_expression("key").terms == 1
    assert compile_expression(NO_MATCH).terms == 2
    assert compile_expression("not (key == 'a' and payload.n > 1)").terms == 4
    flt = Filters.of(expression=NO_MATCH)
    assert flt is not None
    assert flt.scan_within(10_000, 30) == 10  # 30 evaluations / (2 terms + 1)
    assert flt.scan_within(5, 30) == 5  # never raised
    assert flt.scan_within(10_000, 1) == 1  # a page always moves on
    assert flt.scan_within(10_000, 0) == 10_000  # no budget
    assert Filters(key="k").scan_within(10_000, 30) == 10_000  # no expression


@override_settings(BROWSE_EXPRESSION_BUDGET=60)
def test_an_expression_scans_within_the_budget_and_the_cursor_goes_on(orders: None) -> None:
    viewer = login("v")
    first = viewer.get(MSG, {"where": NO_MATCH, "max_scan": 100_000}).json()
    assert first["scanned"] == 20  # 60 evaluations / 3 per entry, not 100 entries
    assert first["max_scan"] == 20
    assert first["max_scan_requested"] == 100_000
    assert first["expression_terms"] == 2
    assert first["stopped_at_bound"] is True
    assert first["next_cursor"]
    second = viewer.get(MSG, {"where": NO_MATCH, "cursor": first["next_cursor"]}).json()
    assert second["scanned"] == 20
    assert second["stopped_at_bound"] is True
    plain = viewer.get(MSG, {"key": "nope"}).json()  # no expression: no budget
    assert plain["scanned"] == 100
    assert plain["stopped_at_bound"] is False
    page = viewer.get(f"{T}/messages/", {"where": NO_MATCH})
    assert page.status_code == 200
    assert b'id="browse-budget"' in page.content
    assert b"expression of 2 terms" in page.content
