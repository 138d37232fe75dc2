"""Issue 30, probed: the rate limits and scopes hold on the side doors too (real redis-server).

A failed "produce a test message" re-renders the browser with the request's own query, so
it must count like the browser it runs (a filter included)."""

from __future__ import annotations

import pytest
import redis
from django.test import Client, override_settings

from mqcore.config import MQConfig
from tests.integration.dlq_support import make_topic, role_user

pytestmark = [pytest.mark.redis, pytest.mark.django_db]

T = "/clusters/default/topics/orders"
NO_MATCH = 'key == "nope"'


@pytest.fixture
def orders(r: redis.Redis, mq_config: MQConfig) -> None:
    make_topic(mq_config, "orders", 2)
    pipe = r.pipeline(transaction=False)
    for i in range(20):
        pipe.xadd(mq_config.keys.partition("orders", i % 2), {"payload": f'{{"n": {i}}}'})
    pipe.execute()


@override_settings(RATELIMIT_FILTER="1/m")
def test_a_failed_produce_does_not_run_the_filtered_browser_past_the_limit(
    orders: None, console_r: redis.Redis
) -> None:
    viewer = Client()
    viewer.force_login(role_user("v", "Viewer"))
    assert viewer.get(f"{T}/messages/", {"where": NO_MATCH}).status_code == 200
    assert viewer.get(f"{T}/messages/", {"where": NO_MATCH}).status_code == 429
    # the produce form's error path renders the browser with the URL's filters
    side = viewer.post(
        f"{T}/messages/produce/?where={NO_MATCH}", {"payload": "x", "partition": "not a number"}
    )
    assert side.status_code == 429
