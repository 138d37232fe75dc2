"""Issue 30, probed: the raw payload downloads as a Viewer scoped to ``orders-*`` and with
hostile references an app wrote (real redis-server). These held on main; kept as guards."""

from __future__ import annotations

import json

import pytest
import redis
from django.contrib.auth.models import Group, User
from django.test import Client

from dashboard.models import GroupTopicScope
from mqcore.config import MQConfig
from tests.integration import retry_items
from tests.integration.dlq_support import make_topic, role_user

pytestmark = [pytest.mark.redis, pytest.mark.django_db]

C = "/clusters/default/topics"
API = "/api/v1/clusters/default/topics"


def _scoped_viewer() -> Client:
    role_user("someone", "Viewer")  # the roles exist
    group = Group.objects.create(name="scope:orders-viewers")
    group.permissions.set(Group.objects.get(name="Viewer").permissions.all())
    GroupTopicScope.objects.create(group=group, cluster="default", pattern="orders-*")
    user = role_user("scoped", None)
    user.groups.add(group)
    client = Client()
    client.force_login(User.objects.get(pk=user.pk))
    return client


@pytest.fixture
def topics(r: redis.Redis, mq_config: MQConfig) -> dict[str, str]:
    keys = mq_config.keys
    make_topic(mq_config, "orders-eu", 1)
    make_topic(mq_config, "payments", 1)
    secret = keys.payload_prefix("payments", 0) + "abc"
    r.set(secret, b"4111 1111 1111 1111")
    letter = r.xadd(keys.dlq("payments"), {"payload": "SECRET-PAN", "partitionId": "0"}).decode()
    item = retry_items.schedule(r, keys, "payments", 0, "SECRET-PAN", due_ms=1).rsplit(":", 1)[1]
    entry = r.xadd(keys.partition("payments", 0), {"payload": "SECRET-PAN"}).decode()
    # an entry of a visible topic whose headers point at the other topic's payload key
    lure = r.xadd(
        keys.partition("orders-eu", 0),
        {"payload": "", "headers": json.dumps({"x-payload-hash-ref": secret})},
    ).decode()
    return {"letter": letter, "item": item, "entry": entry, "lure": lure}


def test_a_scoped_viewer_downloads_nothing_of_other_topics(topics: dict[str, str]) -> None:
    viewer = _scoped_viewer()
    t = topics
    for url in (
        f"{C}/payments/dlq/{t['letter']}/payload/",
        f"{C}/payments/retries/{t['item']}/payload/",
        f"{C}/payments/messages/0/{t['entry']}/payload/",
        f"{API}/payments/dlq/{t['letter']}/payload",
        f"{API}/payments/retries/{t['item']}/payload",
        f"{API}/payments/messages/0/{t['entry']}/payload",
        # another topic's ids through a visible topic: not found there
        f"{C}/orders-eu/dlq/{t['letter']}/payload/",
        f"{C}/orders-eu/retries/{t['item']}/payload/",
        f"{C}/orders-eu/messages/0/{t['entry']}/payload/",
        f"{C}/orders-eu/retries/..%2F..%2Fpayments%3A{t['item']}/payload/",
    ):
        response = viewer.get(url)
        assert response.status_code in (400, 403, 404), (url, response.status_code)
        assert b"SECRET-PAN" not in response.content


def test_an_out_of_line_ref_to_another_topics_key_is_refused(topics: dict[str, str]) -> None:
    response = _scoped_viewer().get(f"{C}/orders-eu/messages/0/{topics['lure']}/payload/")
    assert response.status_code == 404
    assert b"4111" not in response.content
