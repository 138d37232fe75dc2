import json
import re
import time

import pytest
from django.test import Client
from django.utils.html import escape

from dashboard import charts
from mqcore.producer import Producer
from mqcore.topics import Topics
from tests.integration.pages_support import collect, make_user, store_pass, store_unreadable
from tests.snapshot_parts import snapshot, topic

pytestmark = [pytest.mark.redis, pytest.mark.django_db]


@pytest.fixture
def viewer_client(client: Client, redis_url: str, console_r) -> Client:
    client.force_login(make_user())
    return client


def _chart_data(html: str) -> dict:
    match = re.search(r'<script id="chart-data" type="application/json">(.*?)</script>', html, re.S)
    assert match, "chart data block missing"
    return json.loads(match.group(1))


def test_topic_page_shows_group_partition_rows_charts_and_drain(
    viewer_client: Client, mq_config, r
) -> None:
    Topics(mq_config).create("orders", 2, groups=["billing"])
    producer = Producer(mq_config)
    for i in range(6):
        producer.send("orders", f"o{i}", partition=i % 2)
    r.xreadgroup("billing", "c1", {mq_config.keys.partition("orders", 0): ">"}, count=1)
    now = int(time.time() * 1000)
    entity = "orders/billing"
    store_pass(None, points=[("lag", entity, 50.0), ("produced_total", "orders", 0.0)],
               now_ms=now - 240_000)  # fmt: skip
    store_pass(None, points=[("lag", entity, 20.0), ("produced_total", "orders", 600.0)],
               now_ms=now - 120_000)  # fmt: skip
    collect(points=[("lag", entity, 5.0), ("produced_total", "orders", 1200.0)], now_ms=now)

    response = viewer_client.get("/clusters/default/topics/orders/")
    html = response.content.decode()
    assert response.status_code == 200
    assert 'data-group="billing"' in html
    assert "window 1/2 partitions complete" in html  # the group's status window completeness
    # partitions 0 and 1, in the group's table and in the partition panel
    assert html.count('<th scope="row" class="num">') == 4
    assert 'data-drain-state="draining"' in html
    assert "/clusters/default/topics/orders/dlq/" in html
    figures = _chart_data(html)
    assert set(figures) == {"lag", "lag_ms", "rates", "dlq", "partition_lag", "memory"}
    assert figures["lag"]["data"][0]["name"] == "billing"
    assert figures["lag"]["data"][0]["y"] == [50.0, 20.0, 5.0]
    assert figures["rates"]["data"][0]["y"] == [5.0, 5.0]  # 600 per 120 s
    # Four minutes of data in a 7-day window: the x axis spans the data (at least 5 min),
    # not the whole week with every line squeezed against the right edge.
    week = _chart_data(
        viewer_client.get("/clusters/default/topics/orders/?window=7d").content.decode()
    )
    start, end = week["lag"]["layout"]["xaxis"]["range"]
    assert end - start == charts.MIN_X_SPAN_MS
    assert start <= now - 240_000
    empty_start, empty_end = week["dlq"]["layout"]["xaxis"]["range"]  # no DLQ samples
    assert empty_end - empty_start == 7 * 86_400_000
    assert viewer_client.get("/clusters/default/topics/orders/?window=2y").status_code == 400


def test_charts_refresh_with_the_numbers(viewer_client: Client, mq_config) -> None:
    Topics(mq_config).create("orders", 1, groups=["billing"])
    now = int(time.time() * 1000)
    store_pass(None, points=[("lag", "orders/billing", 9.0)], now_ms=now - 60_000)
    collect(points=[("lag", "orders/billing", 3.0)], now_ms=now)
    page = viewer_client.get("/clusters/default/topics/orders/").content.decode()
    live = page.split('<div id="topic-live"', 1)[1].split('<section class="charts"', 1)[0]
    assert 'id="chart-data"' in live  # the figures sit inside the polled region
    poll = viewer_client.get("/clusters/default/topics/orders/", HTTP_HX_REQUEST="true")
    html = poll.content.decode()
    assert html.lstrip().startswith('<div id="topic-live"')
    assert _chart_data(html)["lag"]["data"][0]["y"] == [9.0, 3.0]
    assert "<script>" not in html  # CSP: data only, charts.js draws
    assert "data-pause-live" in page


def test_null_lag_is_shown_as_not_exact_with_its_reason(
    viewer_client: Client, mq_config, r
) -> None:
    Topics(mq_config).create("gaps", 1, groups=["g"])
    producer = Producer(mq_config)
    ids = [producer.send("gaps", f"m{i}").id for i in range(5)]
    stream = mq_config.keys.partition("gaps", 0)
    r.xreadgroup("g", "c1", {stream: ">"}, count=1)
    r.xdel(stream, ids[3])  # a tombstone after the group's position: Redis lag is NULL
    r.xgroup_create(stream, "late", id=ids[2])  # a group created mid-stream
    snap = collect()
    parts = {g["group"]: g["partitions"][0] for g in snap["topics"][0]["groups"]}
    assert parts["g"]["exactness"] != "exact"
    html = viewer_client.get("/clusters/default/topics/gaps/").content.decode()
    assert parts["g"]["lag_reason"]
    assert escape(parts["g"]["lag_reason"]) in html
    assert 'data-group="late"' in html
    assert f"{parts['g']['lag']}*" in html  # counted, marked as such


def test_empty_topic_and_topic_without_groups(viewer_client: Client, mq_config) -> None:
    Topics(mq_config).create("quiet", 1, groups=[])
    Topics(mq_config).create("empty", 1)
    collect()
    quiet = viewer_client.get("/clusters/default/topics/quiet/")
    assert quiet.status_code == 200
    assert b"No consumer group reads this topic" in quiet.content
    empty = viewer_client.get("/clusters/default/topics/empty/")
    assert empty.status_code == 200
    assert b"caught up" in empty.content or b"no lag samples" in empty.content


def test_unknown_topic_is_a_friendly_404(viewer_client: Client, mq_config) -> None:
    collect()
    response = viewer_client.get("/clusters/default/topics/nope/")
    assert response.status_code == 404
    assert b"unknown topic" in response.content


def test_topic_created_after_the_last_pass_is_not_a_404(viewer_client: Client, mq_config) -> None:
    collect()
    Topics(mq_config).create("fresh", 1)
    response = viewer_client.get("/clusters/default/topics/fresh/")
    assert response.status_code == 200
    assert b"Not collected yet" in response.content


def test_odd_snapshot_data_never_500s(viewer_client: Client, mq_config) -> None:
    Topics(mq_config).create("odd", 1)
    now = int(time.time() * 1000)
    odd = {
        "taken_at_ms": now,
        "topics": [
            {"topic": "odd", "groups": [{"group": "g", "partitions": [{"partition": 0}]}],
             "lag": "NaN?", "status": "WHAT", "error": "boom"},
            {"no": "topic"},
            "not a dict",
        ],
    }  # fmt: skip
    store_unreadable(odd, now_ms=now)
    overview = viewer_client.get("/clusters/default/")
    assert overview.status_code == 200
    response = viewer_client.get("/clusters/default/topics/odd/")
    assert response.status_code == 200
    # refused at its decode, as a whole: the pages say so rather than show parts of it
    for page in (overview, response):
        assert b"collector data unreadable" in page.content
    # a topic the collector could not read is a snapshot like any other: its error shows
    store_pass(snapshot([topic("odd", error="boom", status="ERR")], now), now_ms=now)
    response = viewer_client.get("/clusters/default/topics/odd/")
    assert response.status_code == 200
    assert b"boom" in response.content


def test_partition_lag_traces_sampled_once_a_minute(
    viewer_client: Client, mq_config, r, console_r
) -> None:
    from dashboard.clusters import console_store
    from dashboard.collectors.passes import collect_cluster

    Topics(mq_config).create("skewed", 3, groups=["billing"])
    producer = Producer(mq_config)
    for i in range(9):
        producer.send("skewed", f"s{i}", partition=0 if i < 7 else 1)
    assert collect_cluster("default", claim=False).stored
    assert collect_cluster("default", claim=False).stored  # same minute: not sampled again
    since = int(time.time() * 1000) - 3_600_000
    entities = [f"skewed/billing/{p}" for p in range(3)]
    series = console_store().series_many("default", "partition_lag", entities, since_ms=since)
    assert [len(series[e]) for e in entities] in ([1, 1, 1], [2, 2, 2])  # a minute may turn
    assert series["skewed/billing/0"][-1][1] == 7.0

    figures = _chart_data(viewer_client.get("/clusters/default/topics/skewed/").content.decode())
    names = [t["name"] for t in figures["partition_lag"]["data"] if t["name"] != "events"]
    assert names == ["billing p0", "billing p1", "billing p2"]  # most lagging first
    api = viewer_client.get(
        "/api/v1/clusters/default/topics/skewed/series?metric=partition_lag&group=billing"
    ).json()
    assert [(p["partition"], p["points"][-1][1]) for p in api["partitions"]] == [
        (0, 7.0),
        (1, 2.0),
        (2, 0.0),
    ]
    assert api["left_out"] == 0
