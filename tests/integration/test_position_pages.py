"""Group position moves in the console: service and audit rows, page, API, REWIND status."""

from __future__ import annotations

import pytest
import redis
from django.core.exceptions import PermissionDenied
from django.test import Client

from dashboard.models import ApiToken, AuditEvent, AuditEventType
from dashboard.selectors.position import GroupMove
from dashboard.services.audit import Actor
from dashboard.services.position import ConfirmationError, set_group_position
from mqcore.config import MQConfig
from tests.integration.dlq_support import make_topic, role_user

pytestmark = [pytest.mark.redis, pytest.mark.django_db]
G = "default-group"
PAGE = "/clusters/default/topics/orders/groups/default-group/position/"
API = "/api/v1/clusters/default/topics/orders/groups/default-group/position"


@pytest.fixture
def key(r: redis.Redis, mq_config: MQConfig) -> str:
    make_topic(mq_config, "orders", 2)
    key = mq_config.keys.partition("orders", 0)
    for ms in (1000, 2000, 3000, 4000):
        r.xadd(key, {"payload": "x"}, id=f"{ms}-0")
    r.xreadgroup(G, "c1", {key: ">"}, count=4)
    r.xack(key, G, "1000-0", "2000-0", "3000-0", "4000-0")
    return key


def _lag(r: redis.Redis, key: str) -> tuple[bytes, int | None]:
    g = r.xinfo_groups(key)[0]
    return g["last-delivered-id"], g["lag"]


def test_service_moves_and_writes_the_audit_contract(r: redis.Redis, key: str) -> None:
    admin = role_user("ada", "Admin")
    actor = Actor(admin, cluster="default", topic="orders")
    earliest = GroupMove.of(G, "earliest")
    with pytest.raises(ConfirmationError):
        set_group_position(actor, earliest, reason="fix", confirm="default")
    with pytest.raises(ValueError, match="reason"):
        set_group_position(actor, earliest, reason=" ", confirm=G)
    with pytest.raises(ValueError, match="invalid time"):
        GroupMove.of(G, "time", "noon")
    assert not AuditEvent.objects.exists()
    assert _lag(r, key) == (b"4000-0", 0)
    for role in ("Viewer", "Operator"):
        other = Actor(role_user(role.lower(), role), cluster="default", topic="orders")
        with pytest.raises(PermissionDenied):
            set_group_position(other, earliest, reason="x", confirm=G)
    move = GroupMove.of(G, "earliest", partitions=[0])
    result = set_group_position(actor, move, reason="reprocess after fix", confirm=G)
    assert result["direction"] == "rewind"
    assert _lag(r, key) == (b"0-0", 4)
    intent, outcome = AuditEvent.objects.order_by("id")
    assert intent.event_type == outcome.event_type == AuditEventType.GROUP_SET_POSITION
    assert (intent.cluster, intent.topic, intent.reason) == (
        "default",
        "orders",
        "reprocess after fix",
    )
    assert intent.detail == {
        "group": G, "target": {"kind": "earliest", "value": None}, "partitions": [0],
        "force": False,
    }  # fmt: skip
    assert outcome.outcome == "moved"
    assert outcome.counts == {"partitions": 1, "skipped": 0, "redelivered": 4}
    assert outcome.detail == {
        "group": G,
        "direction": "rewind",
        "moved": [0],
        "moves": [{"partition": 0, "from_id": "4000-0", "to_id": "0-0", "skipped": 0,
                   "redelivered": 4}],
    }  # fmt: skip
    set_group_position(actor, GroupMove.of(G, "time", "3000"), reason="skip", confirm=G)
    last = AuditEvent.objects.order_by("-id").first()
    assert last is not None
    assert last.detail["direction"] == "skip"
    assert [m["partition"] for m in last.detail["moves"]] == [0, 1]
    assert AuditEvent.objects.order_by("id")[2].detail["partitions"] == ["all"]
    assert _lag(r, key) == (b"2000-0", 2)


def test_page_dry_run_and_move(client: Client, r: redis.Redis, key: str) -> None:
    client.force_login(role_user("ada", "Admin"))
    topic_page = client.get("/clusters/default/topics/orders/")
    assert topic_page.status_code == 200
    page = client.get(PAGE)
    assert page.status_code == 200
    assert b"Dry run" in page.content
    plan = client.get(PAGE + "plan/?kind=id&id_value=2000-0&scope=some&partitions=0",
                      HTTP_HX_REQUEST="true")  # fmt: skip
    assert plan.status_code == 200
    html = plan.content.decode()
    assert 'id="plan"' in html
    assert "<html" not in html  # the partial only
    assert "deliver <strong>2</strong> again" in html
    assert _lag(r, key) == (b"4000-0", 0)
    bad = client.get(PAGE + "plan/?kind=id&id_value=99999-0&scope=some&partitions=0")
    assert bad.status_code == 400
    assert b"beyond the last id" in bad.content
    form = {"kind": "id", "id_value": "2000-0", "scope": "some", "partitions": "0",
            "reason": "reprocess"}  # fmt: skip
    wrong = client.post(PAGE + "move/", {**form, "confirm": "nope"})
    assert wrong.status_code == 400
    assert b"exact group name" in wrong.content
    assert _lag(r, key) == (b"4000-0", 0)
    done = client.post(PAGE + "move/", {**form, "confirm": G})
    assert done.status_code == 200
    assert b'id="position-result"' in done.content
    assert _lag(r, key) == (b"2000-0", 2)


def test_link_only_for_those_who_can(client: Client, key: str) -> None:
    from tests.integration.pages_support import collect

    collect()
    for role, shown in (("Viewer", False), ("Operator", False), ("Admin", True)):
        client.force_login(role_user(role.lower(), role))
        html = client.get("/clusters/default/topics/orders/").content.decode()
        assert ("Move position" in html) is shown, role
        assert client.get(PAGE).status_code == (200 if shown else 403)


def test_api_plan_and_move(r: redis.Redis, key: str) -> None:
    c = Client()
    tokens = {role: ApiToken.issue(role_user(role.lower(), role), read_only=False)[1]
              for role in ("Viewer", "Operator", "Admin")}  # fmt: skip
    body = {"target": {"kind": "earliest"}, "partitions": [0]}
    for role in ("Viewer", "Operator"):
        auth = {"HTTP_AUTHORIZATION": f"Bearer {tokens[role]}"}
        for url in (API + "/plan", API):
            resp = c.post(url, {**body, "reason": "x", "confirm": G},
                          content_type="application/json", **auth)  # fmt: skip
            assert resp.status_code == 403, (role, url)
    auth = {"HTTP_AUTHORIZATION": f"Bearer {tokens['Admin']}"}
    plan = c.post(API + "/plan", body, content_type="application/json", **auth)
    assert plan.status_code == 200
    assert plan.json()["moves"][0]["redelivered"] == 4
    assert plan.json()["applied"] is False
    assert c.post(API + "/plan", {"target": "x"}, content_type="application/json",
                  **auth).status_code == 400  # fmt: skip
    assert c.post(API, body, content_type="application/json", **auth).status_code == 400
    gone = {**body, "reason": "x", "confirm": "nogroup"}
    nogroup = API.replace(G, "nogroup")
    assert c.post(nogroup, gone, content_type="application/json", **auth).status_code == 404
    done = c.post(API, {**body, "reason": "replay", "confirm": G},
                  content_type="application/json", **auth)  # fmt: skip
    assert done.status_code == 200
    assert done.json()["applied"] is True
    assert _lag(r, key) == (b"0-0", 4)


def test_rewind_shows_in_the_next_collector_pass(r: redis.Redis, key: str, console_r) -> None:
    from dashboard.clusters import console_keys, console_redis
    from dashboard.collectors.passes import collect_cluster
    from dashboard.store import ConsoleStore

    def statuses() -> dict[int, str]:
        snap = ConsoleStore(console_redis(), console_keys()).snapshot_get("default")
        assert snap is not None
        topic = next(t for t in snap.topics if t.topic == "orders")
        group = next(g for g in topic.groups if g.group == G)
        return {p.partition: p.status for p in group.partitions}

    assert collect_cluster("default", claim=False).stored
    assert statuses()[0] == "OK"
    set_group_position(
        Actor(role_user("ada", "Admin"), cluster="default", topic="orders"),
        GroupMove.of(G, "earliest", partitions=[0]),
        reason="reprocess",
        confirm=G,
    )
    assert collect_cluster("default", claim=False).stored
    assert statuses()[0] == "REWIND"


def _racing_partition_1(
    r: redis.Redis, mq_config: MQConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Partition 1 changes under every count (acked and deleted meanwhile)."""
    from mqcore.admin import position as position_module

    key = mq_config.keys.partition("orders", 1)
    for ms in range(5000, 5010):
        r.xadd(key, {"payload": "x"}, id=f"{ms}-0")
    real = position_module.plan_partition
    calls = {"n": 0}

    def racing(client, keys, topic, group, p, target):  # type: ignore[no-untyped-def]
        found = real(client, keys, topic, group, p, target)
        if p == 1:
            calls["n"] += 1
            r.xdel(key, f"{5000 + calls['n']}-0")
        return found

    monkeypatch.setattr(position_module, "plan_partition", racing)


@pytest.mark.parametrize(("chunk", "moved", "not_moved"), [(64, [], ["all"]), (1, [0], [1])])
def test_a_failed_move_names_the_partitions_moved(
    r: redis.Redis,
    mq_config: MQConfig,
    key: str,
    monkeypatch: pytest.MonkeyPatch,
    chunk: int,
    moved: list[int],
    not_moved: list[object],
) -> None:
    from mqcore.admin import position as position_module
    from mqcore.errors import ConcurrentChangeError, PartialMoveError

    monkeypatch.setattr(position_module, "CHUNK", chunk)
    _racing_partition_1(r, mq_config, monkeypatch)
    with pytest.raises((ConcurrentChangeError, PartialMoveError)):
        set_group_position(
            Actor(role_user("ada", "Admin"), cluster="default", topic="orders"),
            GroupMove.of(G, "id", "2000-0"),
            reason="reprocess",
            confirm=G,
        )
    outcome = AuditEvent.objects.order_by("-id").first()
    assert outcome is not None
    assert outcome.outcome == "failed"
    assert (outcome.detail["moved"], outcome.detail["not_moved"]) == (moved, not_moved)
    assert "kept changing" in outcome.detail["error"]
    assert _lag(r, key)[0] == (b"2000-0" if moved else b"4000-0")


@pytest.fixture
def pipeline(r: redis.Redis, mq_config: MQConfig, key: str) -> str:
    r.sadd(mq_config.keys.pipelines(), "enrich")
    r.hset(mq_config.keys.checkpoint_meta("enrich"),
           mapping={"topic": "orders", "group": G, "completed": 1})  # fmt: skip
    return "enrich"


def test_page_refuses_a_pipeline_group_unless_forced(
    client: Client, r: redis.Redis, key: str, pipeline: str
) -> None:
    client.force_login(role_user("ada", "Admin"))
    plan = client.get(PAGE + "plan/?kind=earliest&scope=all", HTTP_HX_REQUEST="true")
    html = plan.content.decode()
    assert 'id="plan-pipelines"' in html
    assert "Pipeline enrich moves this group" in html
    assert 'name="force"' in html
    form = {"kind": "earliest", "scope": "all", "reason": "reprocess", "confirm": G}
    refused = client.post(PAGE + "move/", form)
    assert refused.status_code == 409
    assert b"moved by pipeline enrich" in refused.content
    assert _lag(r, key) == (b"4000-0", 0)
    done = client.post(PAGE + "move/", {**form, "force": "1"})
    assert done.status_code == 200
    assert _lag(r, key) == (b"0-0", 4)
    rows = AuditEvent.objects.order_by("id")
    assert [(e.outcome, e.detail.get("force")) for e in rows] == [
        ("unknown", False), ("failed", None), ("unknown", True), ("moved", None),
    ]  # fmt: skip


def test_api_refuses_a_pipeline_group_unless_forced(
    r: redis.Redis, key: str, pipeline: str
) -> None:
    c = Client()
    token = ApiToken.issue(role_user("ada", "Admin"), read_only=False)[1]
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    body = {"target": {"kind": "earliest"}, "partitions": "all"}
    plan = c.post(API + "/plan", body, content_type="application/json", **auth)
    assert plan.json()["pipelines"] == ["enrich"]
    move = {**body, "reason": "replay", "confirm": G}
    refused = c.post(API, move, content_type="application/json", **auth)
    assert refused.status_code == 409
    assert "moved by pipeline enrich" in refused.content.decode()
    assert c.post(API, {**move, "force": "yes"}, content_type="application/json",
                  **auth).status_code == 400  # fmt: skip
    assert _lag(r, key) == (b"4000-0", 0)
    done = c.post(API, {**move, "force": True}, content_type="application/json", **auth)
    assert done.status_code == 200
    assert _lag(r, key) == (b"0-0", 4)
