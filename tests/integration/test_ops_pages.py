"""/collectors/ and /alerts/ pages: login required, rendered from the console store."""

from __future__ import annotations

import pytest
import redis
from django.contrib.auth.models import Group, User
from django.test import Client

from dashboard.collectors.passes import collect_cluster
from mqcore.config import MQConfig
from mqcore.topics import Topics

pytestmark = [pytest.mark.redis, pytest.mark.django_db]


@pytest.fixture
def viewer(client: Client) -> Client:
    user = User.objects.create_user("viewer", password="pw-viewer-123")
    user.groups.add(Group.objects.get_or_create(name="Viewer")[0])
    client.force_login(user)
    return client


@pytest.mark.parametrize("url", ["/collectors/", "/alerts/"])
def test_login_required(client: Client, url: str) -> None:
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


@pytest.mark.parametrize("url", ["/collectors/", "/alerts/"])
def test_user_without_role_is_refused(client: Client, url: str, console_r: redis.Redis) -> None:
    client.force_login(User.objects.create_user("nobody", password="pw-nobody-123"))
    assert client.get(url).status_code == 403


def test_collectors_page_shows_health(
    viewer: Client, mq_config: MQConfig, console_r: redis.Redis
) -> None:
    Topics(mq_config).create("orders", 2)
    collect_cluster("default")
    response = viewer.get("/collectors/")
    assert response.status_code == 200
    html = response.content.decode()
    assert 'data-cluster="default"' in html
    assert "status-OK" in html
    partial = viewer.get("/collectors/", HTTP_HX_REQUEST="true")
    assert partial.status_code == 200
    assert b"<html" not in partial.content
    assert b"collectors-live" in partial.content


def test_alerts_page_lists_open_and_resolved_escaped(
    viewer: Client, settings, mq_config: MQConfig, r: redis.Redis, console_r: redis.Redis
) -> None:
    settings.ALERT_DLQ_GROWTH = 1
    settings.DLQ_GROWTH_WINDOW_S = 0
    Topics(mq_config).create("orders", 1)
    assert collect_cluster("default", claim=False).stored
    r.xadd(mq_config.keys.dlq("orders"), {"payload": "<script>alert(1)</script>"})
    assert collect_cluster("default", claim=False).stored
    html = viewer.get("/alerts/").content.decode()
    assert "dlq_growth" in html
    assert "orders: DLQ grew by 1" in html
    assert "<script>alert" not in html
    assert collect_cluster("default", claim=False).stored  # no growth since: resolves
    page = viewer.get("/alerts/?cluster=default")
    assert page.context["open_alerts"] == []
    assert [a["rule"] for a in page.context["resolved_alerts"]] == ["dlq_growth"]


@pytest.mark.parametrize(("url", "label"), [("/collectors/", "Collectors"), ("/alerts/", "Alerts")])
def test_ops_pages_mark_their_nav_link_and_show_the_live_toggle(
    viewer: Client, console_r: redis.Redis, url: str, label: str
) -> None:
    html = viewer.get(url).content.decode()
    assert f'<a href="{url}" aria-current="page">{label}</a>' in html
    assert "data-pause-live" in html  # these pages poll
