"""Topic and group administration: mqcore's checked writes, the services' audit rows, and
the API twins (success, refusal, bad input writes nothing, a narrow grant and a read-only
cluster refused), against a real Redis."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from django.conf import settings
from django.contrib.auth.models import Group, User
from django.test import Client

from dashboard.models import ApiToken, AuditEvent, AuditEventType, GroupTopicScope
from dashboard.permissions import ADMIN
from mqcore.config import MQConfig
from mqcore.errors import AlreadyExistsError, InUseError, UnknownGroupError
from mqcore.retention.trim import topic_trims
from mqcore.topics import Topics, group_start_id
from scripts.embedded import EmbeddedRedis
from tests.integration.acl_support import READER, WRITER, apply_doc_acls, denied, mq_cluster
from tests.integration.dlq_support import make_topic, role_user

pytestmark = [pytest.mark.redis, pytest.mark.django_db]
G = "default-group"
C = "/api/v1/clusters/default"
T = f"{C}/topics/orders/admin"
JSON = "application/json"


def bearer(user: User) -> dict[str, str]:
    _, token = ApiToken.issue(user, read_only=False)
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def _post(path: str, body: dict[str, Any], auth: dict[str, str]) -> Any:
    return Client().post(path, body, content_type=JSON, **auth)


@pytest.fixture
def orders(r: redis.Redis, mq_config: MQConfig) -> str:
    """orders, 2 partitions, default-group read and acked 3 of partition 0's 4 entries."""
    make_topic(mq_config, "orders", 2)
    key = mq_config.keys.partition("orders", 0)
    for ms in (1000, 2000, 3000, 4000):
        r.xadd(key, {"payload": "x"}, id=f"{ms}-0")
    r.xreadgroup(G, "c1", {key: ">"}, count=3)
    r.xack(key, G, "1000-0", "2000-0", "3000-0")
    return key


def _scoped_admin(pattern: str = "orders-*") -> User:
    role_user("someone", ADMIN)
    group = Group.objects.create(name=f"scope:{pattern}")
    group.permissions.set(Group.objects.get(name=ADMIN).permissions.all())
    GroupTopicScope.objects.create(group=group, cluster="", pattern=pattern)
    user = role_user("bob", None)
    user.groups.add(group)
    return User.objects.get(pk=user.pk)


# --- mqcore -----------------------------------------------------------------------------


def test_group_start_ids() -> None:
    assert group_start_id("latest") == "$"
    assert group_start_id("earliest") == "0"
    assert group_start_id("time", 2000) == "1999-18446744073709551615"
    assert group_start_id("time", 0) == "0"
    for bad in (("time", None), ("time", -1), ("soon", None)):
        with pytest.raises(ValueError):
            group_start_id(*bad)


def test_group_create_at_a_time_and_delete_checks(
    r: redis.Redis, mq_config: MQConfig, orders: str
) -> None:
    topics = Topics(mq_config)
    topics.create_group("orders", "from-3000", start="time", at_ms=3000)
    assert r.xreadgroup("from-3000", "x", {orders: ">"}, count=10)[0][1][0][0] == b"3000-0"
    with pytest.raises(AlreadyExistsError):
        topics.create_group("orders", "from-3000")
    use = {u.group: u for u in topics.group_use("orders")}
    assert use[G].pending == 0
    assert use[G].unread == 1
    assert use["from-3000"].pending == 2
    r.set(mq_config.keys.lease("orders", G, 1), "c1")
    with pytest.raises(InUseError, match="1 leased"):
        topics.delete_group("orders", G)
    with pytest.raises(InUseError, match="2 pending"):
        topics.delete_group("orders", "from-3000")
    assert "from-3000" in topics.groups("orders")
    done = topics.delete_group("orders", G, force=True)
    assert (done.deleted, done.partitions, done.leased) == (True, 2, 1)
    assert G not in topics.groups("orders")
    assert not r.exists(mq_config.keys.lease("orders", G, 1))
    with pytest.raises(UnknownGroupError):
        topics.delete_group("orders", G)


def test_topic_delete_refused_while_unread(
    r: redis.Redis, mq_config: MQConfig, orders: str
) -> None:
    topics = Topics(mq_config)
    with pytest.raises(InUseError, match="default-group"):
        topics.delete_unused("orders")
    assert topics.exists("orders")
    assert r.xlen(orders) == 4
    topics.delete_unused("orders", force=True)
    assert not topics.exists("orders")
    assert not r.exists(orders)


def test_trim_by_min_id_stops_at_the_floor(
    r: redis.Redis, mq_config: MQConfig, orders: str
) -> None:
    topics = Topics(mq_config)
    plan = topic_trims(topics, "orders", min_id="9999-0", dry_run=True)
    assert (plan[0].deleted, plan[0].held, plan[0].held_by) == (3, 1, G)
    assert r.xlen(orders) == 4
    done = topic_trims(topics, "orders", min_id="2000-0")
    assert [t.deleted for t in done] == [1, 0]
    assert r.xrange(orders)[0][0] == b"2000-0"
    with pytest.raises(ValueError):
        topic_trims(topics, "orders", min_id="nope")
    with pytest.raises(ValueError):
        topic_trims(topics, "orders")


def test_group_and_topic_admin_on_redis_cluster(cluster_config: MQConfig) -> None:
    """Every key a group delete's script takes shares the topic's hash tag (one slot)."""
    topics = Topics(cluster_config)
    topics.create("orders", 3, new=True)
    topics.create_group("orders", "audit", start="time", at_ms=1000)
    assert {u.group for u in topics.group_use("orders")} == {G, "audit"}
    assert topics.delete_group("orders", "audit").deleted
    plan = topic_trims(topics, "orders", maxlen=0, dry_run=True)
    assert [t.deleted for t in plan] == [0, 0, 0]
    assert topics.delete_unused("orders")[0].group == G
    assert not topics.exists("orders")


# --- API --------------------------------------------------------------------------------


def test_create_grow_and_groups_through_the_api(r: redis.Redis, mq_config: MQConfig) -> None:
    admin = bearer(role_user("ada", ADMIN))
    body = {"topic": "payments", "partitions": 3, "reason": "new service"}
    created = _post(f"{C}/admin/topics/create", body, admin)
    assert created.status_code == 201, created.content
    assert created.json()["partitions"] == 3
    topics = Topics(mq_config)
    assert topics.partition_count("payments") == 3
    assert r.hget(mq_config.keys.meta("payments"), "partitionCount") == b"3"
    assert r.scard(mq_config.keys.partitions_set("payments")) == 3
    assert _post(f"{C}/admin/topics/create", body, admin).status_code == 409
    p = f"{C}/topics/payments/admin"
    grow = {"partitions": 5, "reason": "more", "confirm": "payments"}
    assert _post(f"{p}/grow", {**grow, "confirm": "x"}, admin).status_code == 400
    assert _post(f"{p}/grow", {**grow, "partitions": 2}, admin).status_code == 400
    assert _post(f"{p}/grow", grow, admin).json()["partitions"] == 5
    new_group = {"group": "audit", "start": "earliest", "reason": "r"}
    assert _post(f"{p}/groups", new_group, admin).status_code == 201
    assert _post(f"{p}/groups", new_group, admin).status_code == 409
    assert "audit" in topics.groups("payments")
    kinds = list(AuditEvent.objects.values_list("event_type", "outcome").order_by("id"))
    assert (AuditEventType.TOPIC_CREATE, "created") in kinds
    assert (AuditEventType.TOPIC_GROW, "grown") in kinds
    assert (AuditEventType.GROUP_CREATE, "created") in kinds


def test_trim_plan_and_trim(r: redis.Redis, orders: str) -> None:
    admin = bearer(role_user("ada", ADMIN))
    plan = _post(f"{T}/trim/plan", {"maxlen": 0}, admin).json()
    assert (plan["deleted"], plan["held"]) == (3, 1)
    assert plan["partitions"][0]["held_by"] == G
    assert r.xlen(orders) == 4
    trim = {"max_age": "1s", "reason": "disk", "confirm": "orders"}
    assert _post(f"{T}/trim", {**trim, "confirm": "nope"}, admin).status_code == 400
    assert _post(f"{T}/trim", {"reason": "r", "confirm": "orders"}, admin).status_code == 400
    assert _post(f"{T}/trim", {**trim, "max_age": "soon"}, admin).status_code == 400
    assert _post(f"{T}/trim", {**trim, "min_id": "x-y"}, admin).status_code == 400
    assert not AuditEvent.objects.exists()
    assert r.xlen(orders) == 4
    done = _post(f"{T}/trim", trim, admin).json()
    assert done["deleted"] == 3
    assert r.xlen(orders) == 1  # the unread entry stays
    timeline = Client().get(f"{C}/timeline?topic=orders", **admin).json()
    trims = [e for e in timeline["events"] if e["data"]["action"] == AuditEventType.TOPIC_TRIM]
    assert [e["text"] for e in trims] == ["trim a topic's partitions by ada: trimmed (deleted 3)"]


def test_topic_delete_refused_then_forced(r: redis.Redis, mq_config: MQConfig, orders: str) -> None:
    admin = bearer(role_user("ada", ADMIN))
    plan = _post(f"{T}/delete/plan", {}, admin).json()
    assert plan["needs_force"]
    assert plan["waiting"] == [G]
    body = {"reason": "gone", "confirm": "orders"}
    refused = _post(f"{T}/delete", body, admin)
    assert refused.status_code == 409
    assert "force" in refused.json()["error"]
    assert Topics(mq_config).exists("orders")
    assert (
        _post(f"{T}/delete", {**body, "confirm": "Orders", "force": True}, admin).status_code == 400
    )
    done = _post(f"{T}/delete", {**body, "force": True}, admin)
    assert done.json()["deleted"] is True
    assert not Topics(mq_config).exists("orders")
    outcomes = AuditEvent.objects.filter(event_type=AuditEventType.TOPIC_DELETE)
    outcome_names = sorted(outcomes.values_list("outcome", flat=True))
    assert outcome_names == ["deleted", "failed", "unknown", "unknown"]


def test_group_delete_plan_refused_then_forced(r: redis.Redis, orders: str) -> None:
    admin = bearer(role_user("ada", ADMIN))
    r.xreadgroup(G, "c1", {orders: ">"}, count=1)  # one pending entry
    g = f"{C}/topics/orders/groups/{G}/delete"
    plan = _post(f"{g}/plan", {}, admin).json()
    assert (plan["pending"], plan["needs_force"]) == (1, True)
    assert _post(f"{C}/topics/orders/groups/nope/delete/plan", {}, admin).status_code == 404
    body = {"reason": "old", "confirm": G}
    assert _post(g, body, admin).status_code == 409
    assert _post(g, {**body, "confirm": "x", "force": True}, admin).status_code == 400
    assert _post(g, {**body, "force": True}, admin).json()["deleted"] is True
    assert r.xinfo_groups(orders) == []


def test_narrow_grants_are_refused(r: redis.Redis, mq_config: MQConfig, orders: str) -> None:
    operator = bearer(role_user("op", "Operator"))
    for path, body in (
        (f"{C}/admin/topics/create", {"topic": "x", "reason": "r"}),
        (f"{T}/grow", {"partitions": 4, "reason": "r", "confirm": "orders"}),
        (f"{T}/trim", {"maxlen": 0, "reason": "r", "confirm": "orders"}),
        (f"{T}/trim/plan", {"maxlen": 0}),
        (f"{T}/delete", {"reason": "r", "confirm": "orders", "force": True}),
        (f"{T}/groups", {"group": "g2", "reason": "r"}),
        (f"{C}/topics/orders/groups/{G}/delete", {"reason": "r", "confirm": G, "force": True}),
    ):
        assert _post(path, body, operator).status_code == 403, path
    # an Admin scoped to orders-* administers orders-* only: creating outside is refused
    bob = bearer(_scoped_admin())
    outside = _post(f"{C}/admin/topics/create", {"topic": "payments", "reason": "r"}, bob)
    assert outside.status_code == 403
    assert _post(f"{T}/trim/plan", {"maxlen": 0}, bob).status_code in (403, 404)
    inside = _post(f"{C}/admin/topics/create", {"topic": "orders-eu", "reason": "r"}, bob)
    assert inside.status_code == 201
    topics = Topics(mq_config)
    assert topics.exists("orders-eu")
    assert not topics.exists("payments")
    assert r.xlen(orders) == 4
    assert topics.partition_count("orders") == 2
    assert G in topics.groups("orders")


def test_bad_input_writes_nothing(r: redis.Redis, mq_config: MQConfig) -> None:
    admin = bearer(role_user("ada", ADMIN))
    for body in (
        {"topic": "bad name", "reason": "r"},
        {"topic": "x{y}", "reason": "r"},
        {"topic": "ok", "partitions": 0, "reason": "r"},
        {"topic": "ok", "partitions": "3", "reason": "r"},
        {"topic": "ok"},
        {"topic": "ok", "groups": ["a:b"], "reason": "r"},
    ):
        assert _post(f"{C}/admin/topics/create", body, admin).status_code == 400, body
    make_topic(mq_config, "orders", 1)
    for body in (
        {"group": "", "reason": "r"},
        {"group": "g", "start": "time", "reason": "r"},
        {"group": "g", "start": "time", "time": "noon", "reason": "r"},
        {"group": "g", "start": "later", "reason": "r"},
    ):
        assert _post(f"{T}/groups", body, admin).status_code == 400, body
    assert not AuditEvent.objects.exists()
    assert r.smembers(mq_config.keys.registry()) == {b"orders"}
    assert Topics(mq_config).groups("orders") == [G]


def test_read_only_cluster_refuses(r: redis.Redis, mq_config: MQConfig, orders: str) -> None:
    admin = bearer(role_user("ada", ADMIN))
    with mq_cluster(**{**settings.MQ_CLUSTERS["default"], "read_only": True}):
        for path, body in (
            (f"{C}/admin/topics/create", {"topic": "x", "reason": "r"}),
            (f"{T}/grow", {"partitions": 4, "reason": "r", "confirm": "orders"}),
            (f"{T}/trim", {"maxlen": 0, "reason": "r", "confirm": "orders"}),
            (f"{T}/delete", {"reason": "r", "confirm": "orders", "force": True}),
            (f"{T}/groups", {"group": "g2", "reason": "r"}),
            (f"{C}/topics/orders/groups/{G}/delete", {"reason": "r", "confirm": G}),
        ):
            assert _post(path, body, admin).status_code == 403, path
    assert r.xlen(orders) == 4
    assert Topics(mq_config).groups("orders") == [G]
    assert not Topics(mq_config).exists("x")


# --- pages ------------------------------------------------------------------------------


def test_pages_links_and_partials(client: Client, r: redis.Redis, orders: str) -> None:
    client.force_login(role_user("ada", ADMIN))
    assert b'id="create-topic-link"' in client.get("/clusters/default/").content
    topic_page = client.get("/clusters/default/topics/orders/").content
    assert b'id="admin-link"' in topic_page
    page = client.get("/clusters/default/topics/orders/admin/")
    assert page.status_code == 200
    assert b'data-group="default-group"' in page.content
    plan = client.get(
        "/clusters/default/topics/orders/admin/trim/plan/?maxlen=0", HTTP_HX_REQUEST="true"
    )
    html = plan.content.decode()
    assert 'id="trim-plan"' in html
    assert "<html" not in html
    assert 'name="maxlen" value="0"' in html
    delete = client.get("/clusters/default/topics/orders/admin/delete/plan/")
    assert b'id="delete-refused"' in delete.content
    viewer = Client()
    viewer.force_login(role_user("vic", "Viewer"))
    assert b"create-topic-link" not in viewer.get("/clusters/default/").content
    assert viewer.get("/clusters/default/topics/orders/admin/").status_code == 403
    assert viewer.get("/clusters/default/admin/topics/").status_code == 403


def test_hostile_input_is_refused_and_never_echoed_raw(client: Client, orders: str) -> None:
    client.force_login(role_user("ada", ADMIN))
    evil = "<img src=x onerror=alert(1)>"
    base = "/clusters/default/topics/orders"
    for url in (
        f"{base}/admin/trim/plan/?min_id={evil}",
        f"{base}/admin/trim/plan/?max_age={evil}",
        f"{base}/groups/{evil}/delete/plan/",
    ):
        resp = client.get(url)
        assert resp.status_code in (400, 404), url
        assert evil not in resp.content.decode()
    made = client.post("/clusters/default/admin/topics/create/", {"topic": evil, "reason": "r"})
    assert made.status_code == 400
    assert evil not in made.content.decode()


def test_through_the_doc_reader_and_writer(tmp_path: Any, console_r: redis.Redis) -> None:
    """The ACL users of docs/deploy.md: the dry runs read through the reader, every write goes
    through the writer, and Redis refuses none of their commands."""
    server = EmbeddedRedis(tmp_path).start()
    admin = redis.Redis(host=server.host, port=server.port)
    try:
        users = apply_doc_acls(admin)
        url = {n: f"redis://{auth}@{server.host}:{server.port}/0" for n, auth in users.items()}
        cfg = MQConfig.from_url(server.url)
        admin.acl_log_reset()
        ada = bearer(role_user("ada", ADMIN))
        with mq_cluster(url=url[READER], write_url=url[WRITER]):
            assert (
                _post(
                    f"{C}/admin/topics/create", {"topic": "orders", "reason": "r"}, ada
                ).status_code
                < 300
            )
            key = cfg.keys.partition("orders", 0)
            for ms in (1000, 2000):
                admin.xadd(key, {"payload": "x"}, id=f"{ms}-0")
            grow = {"partitions": 2, "reason": "r", "confirm": "orders"}
            assert _post(f"{T}/grow", grow, ada).status_code < 300
            assert Client().get(T, **ada).status_code < 300
            assert _post(f"{T}/trim/plan", {"min_id": "2000-0"}, ada).status_code < 300
            trim = {"min_id": "2000-0", "reason": "r", "confirm": "orders"}
            assert _post(f"{T}/trim", trim, ada).status_code < 300
            assert _post(f"{T}/groups", {"group": "audit", "reason": "r"}, ada).status_code < 300
            g = f"{C}/topics/orders/groups/audit/delete"
            assert _post(f"{g}/plan", {}, ada).status_code < 300
            assert _post(g, {"reason": "r", "confirm": "audit"}, ada).status_code < 300
            assert _post(f"{T}/delete/plan", {}, ada).status_code < 300
            forced = {"reason": "r", "confirm": "orders", "force": True}
            assert _post(f"{T}/delete", forced, ada).status_code < 300
        assert denied(admin) == []
        assert not admin.exists(key)
    finally:
        admin.close()
        server.stop()
