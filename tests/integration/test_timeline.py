"""The incident timeline end to end: real Redis, real collector passes, selector, page, API."""

from __future__ import annotations

import time
from typing import Any

import pytest
import redis
from django.test import Client, override_settings

from dashboard.collectors.incidents import event
from dashboard.collectors.passes import collect_cluster
from dashboard.models import AuditEventType
from dashboard.selectors.pages.timeline import TimelineFilter, timeline_get
from dashboard.services.audit import Actor, audit_begin, audit_complete
from mqcore.config import MQConfig
from mqcore.leases import LeaseManager
from mqcore.producer import Producer
from mqcore.topics import Topics
from tests.integration.dlq_support import add_letters
from tests.integration.pages_support import make_user, store_pass
from tests.integration.test_xss_pages import EVIL, assert_inert

pytestmark = [pytest.mark.redis, pytest.mark.django_db]


def _incident_passes(r: redis.Redis, mq_config: MQConfig) -> None:
    """Pass 1 records; then orders-b's lease expires, 40 letters hit the DLQ, the status moves."""
    Topics(mq_config).create("orders", 2, groups=["billing"])
    producer = Producer(mq_config)
    for i in range(6):
        producer.send("orders", f"m{i}", partition=i % 2)
    lease = LeaseManager(r, mq_config.keys, topic="orders", group="billing", owner="orders-b",
                         ttl_ms=300)  # fmt: skip
    assert lease.acquire(0) is not None
    with override_settings(STATUS_WINDOW_SAMPLES=2, INCIDENT_DLQ_BURST=10):
        assert collect_cluster("default", claim=False).stored
        time.sleep(0.5)  # the lease runs out
        add_letters(r, mq_config, "orders", 40)
        producer.send("orders", "more", partition=0)
        assert collect_cluster("default", claim=False).stored


def _position_row(user: Any) -> None:
    intent = audit_begin(
        Actor(user, cluster="default", topic="orders"),
        AuditEventType.GROUP_SET_POSITION,
        reason="reprocess",
        detail={"group": "billing"},
    )
    audit_complete(
        intent,
        outcome="moved",
        counts={"partitions": 2, "skipped": 0, "redelivered": 7},
        detail={"group": "billing", "direction": "rewind", "moves": [
            {"partition": 0, "from_id": "9-0", "to_id": "2-0", "skipped": 0, "redelivered": 7}]},
    )  # fmt: skip


def test_lease_expiry_dlq_burst_and_status_change_reach_selector_page_and_api(
    client: Client, r: redis.Redis, mq_config: MQConfig, console_r: redis.Redis
) -> None:
    _incident_passes(r, mq_config)
    user = make_user("sre", "Operator")
    _position_row(user)
    data = timeline_get("default", user=user, where=TimelineFilter(topic="orders"))
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for e in data["events"]:
        by_kind.setdefault(e["kind"], []).append(e)
    (expired,) = [e for e in by_kind["lease"] if e["data"]["event"] == "expired"]
    assert (expired["group"], expired["partition"]) == ("billing", 0)
    assert "orders-b" in expired["text"]
    (burst,) = by_kind["dlq"]
    assert burst["data"]["added"] == 40
    assert burst["text"].startswith("40 dead letters")
    assert by_kind["status"][0]["data"]["from"] == "OK"
    (moved,) = by_kind["position"]
    assert "position moved back: 7 entries will be delivered again" in moved["text"]
    keys = [(e["at_ms"], e["id"]) for e in data["events"]]
    assert [k[0] for k in keys] == sorted((k[0] for k in keys), reverse=True)

    client.force_login(user)
    page = client.get("/clusters/default/timeline/?kind=dlq&kind=lease")
    assert page.status_code == 200
    html = page.content.decode()
    assert "40 dead letters since the last pass" in html
    assert "expired (owner orders-b)" in html
    assert 'data-kind="status"' not in html  # filtered out
    partial = client.get("/clusters/default/topics/orders/timeline/?kind=position",
                         headers={"HX-Request": "true"})  # fmt: skip
    body = partial.content.decode()
    assert body.lstrip().startswith('<section class="card" id="timeline-list">')
    assert "entries will be delivered again" in body

    api = client.get("/api/v1/clusters/default/timeline?topic=orders&kind=dlq,status&limit=1")
    assert api.status_code == 200
    first = api.json()
    assert len(first["events"]) == 1
    assert first["events"][0]["kind"] in {"dlq", "status"}
    rest = client.get(
        f"/api/v1/clusters/default/timeline?topic=orders&kind=dlq,status&before={first['next_before']}"
    ).json()
    assert {e["kind"] for e in first["events"] + rest["events"]} == {"dlq", "status"}
    assert first["events"][0]["id"] not in {e["id"] for e in rest["events"]}

    charts = client.get("/clusters/default/topics/orders/")
    figures = charts.context["figures"]
    markers = [t for t in figures["lag"]["data"] if t.get("name") == "events"]
    assert markers
    assert any("40 dead letters" in text for text in markers[0]["hovertext"])


@pytest.mark.parametrize(
    "query",
    [
        "kind=nope",
        "since=yesterday",
        "before=garbage",
        "limit=0",
        "since=2030-01-01&until=2020-01-01",
    ],
)
def test_bad_filters_answer_400(client: Client, console_r: redis.Redis, query: str) -> None:
    client.force_login(make_user("viewer", "Viewer"))
    assert client.get(f"/api/v1/clusters/default/timeline?{query}").status_code == 400
    assert client.get(f"/clusters/default/timeline/?{query}").status_code == 400


def test_odd_members_and_hidden_topics_never_break_the_page(
    client: Client, console_r: redis.Redis, mq_config: MQConfig
) -> None:
    from dashboard.clusters import console_keys

    now = int(time.time() * 1000)
    console_r.zadd(console_keys().incidents("default"), {b"not json": now, b"[1,2]": now})
    store_pass(None, now_ms=now, incidents=[event(now, "dlq", "visible", topic="orders")])
    client.force_login(make_user("viewer", "Viewer"))
    page = client.get("/clusters/default/timeline/")
    assert page.status_code == 200
    assert "visible" in page.content.decode()
    assert client.get("/api/v1/clusters/default/timeline").json()["events"][0]["text"] == "visible"


def test_hostile_names_are_inert_on_the_timeline_and_escaped_for_plotly(
    client: Client, r: redis.Redis, mq_config: MQConfig, console_r: redis.Redis
) -> None:
    Topics(mq_config).create("hostile", 1, groups=["g"])
    Producer(mq_config).send("hostile", "x")
    now = int(time.time() * 1000)
    store_pass(None, now_ms=now, incidents=[
        event(now - i, "consumer", f"group g: consumer {evil} joined", topic="hostile", group="g")
        for i, evil in enumerate(EVIL)
    ])  # fmt: skip
    from tests.integration.pages_support import collect

    collect(points=[("lag", "hostile/g", 1.0)])
    client.force_login(make_user("op", "Operator"))
    for url in ("/clusters/default/timeline/", "/clusters/default/topics/hostile/timeline/",
                "/clusters/default/topics/hostile/"):  # fmt: skip
        response = client.get(url)
        assert response.status_code == 200
        assert_inert(response.content.decode())
    timeline = client.get("/clusters/default/timeline/").content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in timeline
    figures = client.get("/clusters/default/topics/hostile/").context["figures"]
    texts = [t for fig in figures.values() for tr in fig["data"] if tr.get("name") == "events"
             for t in tr["hovertext"]]  # fmt: skip
    assert len(texts) >= len(EVIL) * len(figures)
    assert all("<" not in t and ">" not in t for t in texts)
    assert any("&lt;script&gt;" in t for t in texts)


def test_timeline_command_prints_and_pages_the_same_events(
    r: redis.Redis, mq_config: MQConfig, console_r: redis.Redis
) -> None:
    import json
    from io import StringIO

    from django.core.management import CommandError, call_command

    _incident_passes(r, mq_config)
    out = StringIO()
    call_command("timeline", "--topic", "orders", "--json", stdout=out)
    data = json.loads(out.getvalue())
    assert {"lease", "dlq", "status"} <= {e["kind"] for e in data["events"]}
    text = StringIO()
    call_command("timeline", "--kind", "dlq", stdout=text)
    lines = text.getvalue().splitlines()
    assert len(lines) == 1
    assert "dlq" in lines[0]
    assert "orders: 40 dead letters since the last pass" in lines[0]
    first = StringIO()
    call_command("timeline", "--limit", "1", "--json", stdout=first)
    page = json.loads(first.getvalue())
    assert len(page["events"]) == 1
    assert page["next_before"]
    rest = StringIO()
    call_command("timeline", "--before", page["next_before"], "--json", stdout=rest)
    ids = [e["id"] for e in json.loads(rest.getvalue())["events"]]
    assert page["events"][0]["id"] not in ids
    assert ids
    with pytest.raises(CommandError, match="kind"):
        call_command("timeline", "--kind", "nope")
    with pytest.raises(CommandError, match="cluster"):
        call_command("timeline", "--cluster", "elsewhere")
