import re
import time

import pytest
from django.test import Client

from mqcore.producer import Producer
from mqcore.topics import Topics
from tests.integration.pages_support import collect, make_user, store_pass

pytestmark = [pytest.mark.redis, pytest.mark.django_db]


@pytest.fixture
def viewer_client(client: Client, redis_url: str, console_r) -> Client:
    client.force_login(make_user())
    return client


def test_root_redirects_to_first_cluster_overview(viewer_client: Client) -> None:
    response = viewer_client.get("/")
    assert response.status_code == 302
    assert response["Location"] == "/clusters/default/"


def test_overview_without_snapshot_says_collector_has_not_run(viewer_client: Client) -> None:
    response = viewer_client.get("/clusters/default/")
    assert response.status_code == 200
    assert b"No data yet" in response.content
    assert b'href="/collectors/"' in response.content


def test_unknown_cluster_is_a_friendly_404(viewer_client: Client) -> None:
    response = viewer_client.get("/clusters/nope/")
    assert response.status_code == 404
    assert b"unknown cluster" in response.content
    assert b"Back to the overview" in response.content


def test_overview_lists_topics_worst_first_with_problems_toggle(
    viewer_client: Client, mq_config
) -> None:
    topics = Topics(mq_config)
    for name in ("alpha", "beta", "empty"):
        topics.create(name, 2)
    producer = Producer(mq_config)
    for i in range(5):
        producer.send("beta", f"m{i}", key=str(i))
    producer.send("alpha", "x")
    now = int(time.time() * 1000)
    store_pass(None, points=[("lag", "beta", 1.0)], now_ms=now - 60_000)
    collect(statuses={"beta": "STALL"}, points=[("lag", "beta", 5.0)], now_ms=now)

    response = viewer_client.get("/clusters/default/")
    html = response.content.decode()
    assert response.status_code == 200
    order = re.findall(r'<tr data-topic="([^"]+)"', html)
    assert order[0] == "beta"
    assert set(order) == {"alpha", "beta", "empty"}
    assert "STALL" in html
    assert "<polyline points=" in html  # beta's sparkline

    problems = viewer_client.get("/clusters/default/?problems=1").content.decode()
    assert re.findall(r'<tr data-topic="([^"]+)"', problems) == ["beta"]

    by_name = viewer_client.get("/clusters/default/?sort=topic&order=asc").content.decode()
    assert re.findall(r'<tr data-topic="([^"]+)"', by_name) == ["alpha", "beta", "empty"]


def test_overview_pages_on_the_server_and_htmx_gets_only_the_table(
    viewer_client: Client, mq_config, settings
) -> None:
    topics = Topics(mq_config)
    for i in range(55):
        topics.create(f"t{i:02d}", 1)
    collect()
    first = viewer_client.get("/clusters/default/?sort=topic&order=asc").content.decode()
    assert len(re.findall(r"<tr data-topic=", first)) == 50
    assert "1\u201350 of 55" in first
    second = viewer_client.get("/clusters/default/?sort=topic&order=asc&page=2")
    rows = re.findall(r'<tr data-topic="([^"]+)"', second.content.decode())
    assert rows == ["t50", "t51", "t52", "t53", "t54"]

    partial = viewer_client.get("/clusters/default/?page=2", headers={"HX-Request": "true"})
    body = partial.content.decode()
    assert body.lstrip().startswith('<div id="overview-live"')
    assert "<html" not in body
    assert f'hx-trigger="every {settings.COLLECT_INTERVAL_S}s"' in body
    assert "HX-Request" in partial["Vary"]


def test_bad_overview_parameters_are_a_400_page(viewer_client: Client) -> None:
    assert viewer_client.get("/clusters/default/?sort=evil").status_code == 400
    assert viewer_client.get("/clusters/default/?page=x").status_code == 400


def test_overview_requires_login(client: Client) -> None:
    response = client.get("/clusters/default/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_pages_render_a_real_collector_pass(viewer_client: Client, mq_config, r) -> None:
    from dashboard.collectors.passes import collect_cluster

    Topics(mq_config).create("real", 2, groups=["g"])
    producer = Producer(mq_config)
    for i in range(3):
        producer.send("real", f"m{i}", partition=0)
    r.xreadgroup("g", "c1", {mq_config.keys.partition("real", 0): ">"}, count=1)
    result = collect_cluster("default", claim=False)
    assert result.stored, result.error
    overview = viewer_client.get("/clusters/default/").content.decode()
    assert '<tr data-topic="real">' in overview
    topic = viewer_client.get("/clusters/default/topics/real/")
    assert topic.status_code == 200
    assert 'data-group="g"' in topic.content.decode()
    api = viewer_client.get("/api/v1/clusters/default/topics/real").json()
    assert api["lag"] == 2
    assert api["groups"][0]["status"] in (
        "OK",
        "WARN",
        "STALL",
        "STOP",
        "UNKNOWN",
    )
