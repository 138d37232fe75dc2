"""Retention in the console: the tab and its API twin, what-if rules, "trim now" (Admin,
audited), the scheduled housekeeper, and the retention_risk alert from the collector."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis
from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.test import Client

from dashboard.clusters import reset_caches
from dashboard.models import ApiToken, AuditEvent, AuditEventType
from dashboard.services.audit import Actor
from dashboard.services.retention import ConfirmationError, housekeep_cluster, trim_topic
from mqcore.config import MQConfig
from mqcore.retention import RetentionPolicy
from tests.integration.dlq_support import role_user
from tests.integration.raw_java import create_topic

pytestmark = [pytest.mark.redis, pytest.mark.django_db]
FAST, SLOW = "fast-group", "slow-group"
PAGE = "/clusters/default/topics/orders/retention/"
API = "/api/v1/clusters/default/topics/orders/retention"


@pytest.fixture
def clusters_with(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Set extra options of the ``default`` cluster for one test."""

    def apply(**extra: Any) -> None:
        base = dict(settings.MQ_CLUSTERS["default"])
        monkeypatch.setattr(settings, "MQ_CLUSTERS", {"default": {**base, **extra}})
        reset_caches()

    yield apply
    reset_caches()


@pytest.fixture
def key(r: redis.Redis, mq_config: MQConfig) -> str:
    create_topic(r, mq_config.keys, "orders", 1, groups=(FAST, SLOW))
    key = mq_config.keys.partition("orders", 0)
    pipe = r.pipeline(transaction=False)
    for i in range(300):
        pipe.xadd(key, {"payload": f"<b>m{i}</b>"}, id=f"{1_000 + i}-0")
    pipe.execute()
    fast = r.xreadgroup(FAST, "f1", {key: ">"}, count=300)[0][1]
    r.xack(key, FAST, *[e[0] for e in fast])
    slow = r.xreadgroup(SLOW, "s1", {key: ">"}, count=100)[0][1]
    r.xack(key, SLOW, *[e[0] for e in slow])
    return key


def test_tab_shows_floors_rules_and_risk(client: Client, key: str, clusters_with: Any) -> None:
    clusters_with(retention={"maxlen": 50}, java_retention={"maxlen": 150})
    client.force_login(role_user("vic", "Viewer"))
    html = client.get(PAGE).content.decode()
    assert "keep 50 entries per partition" in html
    assert 'id="retention-risk"' in html  # Java keeps 150: slow-group has 200 unread
    assert "slow-group</strong> would lose 50" in html
    assert "Trim now" not in html  # a Viewer cannot trim
    part = client.get(PAGE + "?maxlen=10&consumed=1", HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in part
    assert "What if" in part
    bad = client.get(PAGE + "?maxlen=lots")
    assert bad.status_code == 400
    assert b"maxlen" in bad.content
    api = client.get(API).json()
    rules = {r["rule"]: r for r in api["partitions"][0]["rules"]}
    assert (rules["maxlen"]["would_delete"], rules["maxlen"]["held_by"]) == (100, SLOW)
    assert rules["java-maxlen"]["at_risk"] == {SLOW: 50}
    assert api["at_risk_groups"] == {SLOW: 50}


def test_trim_now_is_admin_only_confirmed_and_audited(
    client: Client, r: redis.Redis, key: str
) -> None:
    kw: dict[str, Any] = {"reason": "disk"}
    where = {"cluster": "default", "topic": "orders"}
    policy = RetentionPolicy.build(maxlen=10)
    for role in ("Viewer", "Operator"):
        actor = Actor(role_user(role.lower(), role), **where)
        with pytest.raises(PermissionDenied):
            trim_topic(actor, policy=policy, confirm="orders", **kw)
    admin = role_user("ada", "Admin")
    with pytest.raises(ConfirmationError):
        trim_topic(Actor(admin, **where), policy=policy, confirm="order", **kw)
    with pytest.raises(ValueError, match="no retention rule"):
        trim_topic(Actor(admin, **where), policy=None, confirm="orders", **kw)
    assert not AuditEvent.objects.exists()
    assert r.xlen(key) == 300
    client.force_login(admin)
    done = client.post(PAGE + "trim/", {"maxlen": "10", "reason": "disk", "confirm": "orders"})
    assert done.status_code == 200
    assert b'id="trim-result"' in done.content
    assert r.xlen(key) == 200  # the slow group's 200 unread entries stay
    intent, outcome = AuditEvent.objects.order_by("id")
    assert intent.event_type == AuditEventType.RETENTION_TRIM
    assert intent.detail["policy"]["maxlen"] == 10
    assert outcome.counts == {"deleted": 100, "partitions": 1}
    assert outcome.detail["partitions"][0]["held_by"] == SLOW


def test_api_twin_of_trim(r: redis.Redis, key: str) -> None:
    c = Client()
    viewer = ApiToken.issue(role_user("vic", "Viewer"), read_only=False)[1]
    admin = ApiToken.issue(role_user("ada", "Admin"), read_only=False)[1]
    body = {"consumed": True, "reason": "tidy", "confirm": "orders"}
    resp = c.post(API + "/trim", body, content_type="application/json",
                  HTTP_AUTHORIZATION=f"Bearer {viewer}")  # fmt: skip
    assert resp.status_code == 403
    resp = c.post(API + "/trim", {**body, "maxlen": "x"}, content_type="application/json",
                  HTTP_AUTHORIZATION=f"Bearer {admin}")  # fmt: skip
    assert resp.status_code == 400
    resp = c.post(API + "/trim", body, content_type="application/json",
                  HTTP_AUTHORIZATION=f"Bearer {admin}")  # fmt: skip
    assert resp.status_code == 200
    assert resp.json()["deleted"] == 100
    assert r.xlen(key) == 200


def test_scheduled_housekeeper_runs_only_with_rules(
    r: redis.Redis, key: str, clusters_with: Any
) -> None:
    from dashboard.schedule import beat_schedule

    assert housekeep_cluster("default")["skipped"]
    assert not any(k.startswith("housekeep:") for k in beat_schedule())
    clusters_with(retention={"consumed": True})
    assert "housekeep:default" in beat_schedule()
    assert housekeep_cluster("default")["deleted"] == 100
    intent, outcome = AuditEvent.objects.order_by("id")
    assert (intent.actor, intent.request_id[:12]) == ("system", "housekeeper-")
    assert outcome.counts["deleted"] == 100


def test_collector_opens_a_retention_risk_alert(
    r: redis.Redis, key: str, clusters_with: Any, console_r: redis.Redis
) -> None:
    from dashboard.clusters import console_keys, console_redis
    from dashboard.collectors.passes import collect_cluster
    from dashboard.store import ConsoleStore

    store = ConsoleStore(console_redis(), console_keys())
    collect_cluster("default", claim=False, store=store)
    assert not [a for a in store.alerts_list(["default"]) if a["rule"] == "retention_risk"]
    clusters_with(java_retention={"maxlen": 150})
    collect_cluster("default", claim=False, store=store)
    risky = [a for a in store.alerts_list(["default"]) if a["rule"] == "retention_risk"]
    assert [a["entity"] for a in risky] == ["orders/slow-group"]
    assert "at least 50 unread entries" in risky[0]["message"]


def _risk_alerts(store: Any) -> list[dict[str, Any]]:
    return [a for a in store.alerts_list(["default"]) if a["rule"] == "retention_risk"]


def _collect(console_r: redis.Redis) -> Any:
    from dashboard.clusters import console_keys, console_redis
    from dashboard.collectors.passes import collect_cluster
    from dashboard.store import ConsoleStore

    store = ConsoleStore(console_redis(), console_keys())
    collect_cluster("default", claim=False, store=store)
    return store


def _pending_far_back(r: redis.Redis, mq_config: MQConfig, entries: int) -> str:
    """slow-group read every entry and acked all but the first (lag 0, one pending);
    fast-group read and acked all but the last ten, which it still has pending."""
    create_topic(r, mq_config.keys, "orders", 1, groups=(FAST, SLOW))
    key = mq_config.keys.partition("orders", 0)
    pipe = r.pipeline(transaction=False)
    for i in range(entries):
        pipe.xadd(key, {"payload": f"m{i}"}, id=f"{1_000 + i}-0")
    pipe.execute()
    slow = r.xreadgroup(SLOW, "s1", {key: ">"}, count=entries)[0][1]
    r.xack(key, SLOW, *[e[0] for e in slow[1:]])
    fast = r.xreadgroup(FAST, "f1", {key: ">"}, count=entries)[0][1]
    r.xack(key, FAST, *[e[0] for e in fast[:-10]])
    return key


def test_alert_for_a_pending_entry_javas_maxlen_is_about_to_trim(
    r: redis.Redis, mq_config: MQConfig, clusters_with: Any, console_r: redis.Redis
) -> None:
    # the finding: one pending entry 3,000 back, lag 0, Java maxlen 2,500: no alert fired
    # (the rule looked at lag + pending = 1), and Java's trim removed the pending entry
    _pending_far_back(r, mq_config, 3_000)
    clusters_with(java_retention={"maxlen": 2_500, "frontier_trim": False})
    store = _collect(console_r)
    risky = _risk_alerts(store)
    assert [a["entity"] for a in risky] == ["orders/slow-group"]  # fast-group's 10 are safe
    assert "at least 500 unread entries" in risky[0]["message"]


def test_alert_before_javas_maxlen_reaches_a_pending_floor(
    r: redis.Redis, mq_config: MQConfig, clusters_with: Any, console_r: redis.Redis
) -> None:
    # 2,300 entries from slow-group's floor, Java keeps 2,500: within the last tenth (250)
    _pending_far_back(r, mq_config, 2_300)
    clusters_with(java_retention={"maxlen": 2_500, "frontier_trim": False})
    (risk,) = _risk_alerts(_collect(console_r))
    assert risk["entity"] == "orders/slow-group"
    assert "will reach its oldest unread or pending entry" in risk["message"]
    clusters_with(java_retention={"maxlen": 3_000, "frontier_trim": False})
    assert not _risk_alerts(_collect(console_r))  # 700 writes left of 3,000: not yet


def test_alert_for_a_stopped_group_below_the_leased_position(
    r: redis.Redis, mq_config: MQConfig, clusters_with: Any, console_r: redis.Redis
) -> None:
    # Java's frontier trim waits only for groups holding a lease: fast-group holds one,
    # slow-group (stopped) does not, and its pending entry is below fast-group's position
    _pending_far_back(r, mq_config, 100)
    r.set(mq_config.keys.lease("orders", FAST, 0), "java-worker-1", px=30_000)
    clusters_with(java_retention={"maxlen": 0, "frontier_trim": True})
    (risk,) = _risk_alerts(_collect(console_r))
    assert risk["entity"] == "orders/slow-group"
    assert "java retention may reach its oldest unread or pending entry" in risk["message"]


def test_alert_for_a_pending_entry_older_than_javas_retention(
    r: redis.Redis, mq_config: MQConfig, clusters_with: Any, console_r: redis.Redis
) -> None:
    # lag 0 and lag in time 0: only the pending entry's id tells its age (ids from 1970)
    _pending_far_back(r, mq_config, 50)
    r.xadd(mq_config.keys.partition("orders", 0), {"payload": "new"})
    for g in (FAST, SLOW):
        r.xreadgroup(g, "x", {mq_config.keys.partition("orders", 0): ">"})
    clusters_with(java_retention={"maxlen": 0, "retention": "7d", "frontier_trim": False})
    risky = _risk_alerts(_collect(console_r))
    assert sorted(a["entity"] for a in risky) == ["orders/fast-group", "orders/slow-group"]


def test_tab_shows_when_javas_rules_reach_a_stopped_groups_backlog(
    client: Client, r: redis.Redis, mq_config: MQConfig, clusters_with: Any
) -> None:
    # a stopped group with an attacker's name: no lease, one pending entry 3,000 back
    evil = "<img src=x onerror=alert(1)>"
    key = _pending_far_back(r, mq_config, 3_000)
    r.xgroup_create(key, evil, id="0")
    r.set(mq_config.keys.lease("orders", FAST, 0), "java-worker-1", px=30_000)
    clusters_with(retention={"maxlen": 10_000}, java_retention={"maxlen": 2_500})
    client.force_login(role_user("vic", "Viewer"))
    html = client.get(PAGE).content.decode()
    assert evil not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert 'id="retention-next"' in html  # each group's first loss, soonest first
    assert "Java does not wait" in html
    assert "slow-group</strong> would lose 500" in html  # its pending entry counted
    assert "next housekeeper run" not in html  # 10,000: the housekeeper deletes nothing
    assert "housekeeper (every 1 min)" in html
    api = client.get(API).json()
    losses = {t["group"]: t for t in api["next_losses"]}
    slow = losses[SLOW]
    assert (slow["rule"], slow["lost"], slow["leased"]) == ("java-maxlen", 500, False)
    assert losses[evil]["lost"] == 500
    assert api["at_risk_groups"] == {evil: 500, SLOW: 500}  # the worst rule, not their sum
    rules = {x["rule"]: x for x in api["partitions"][0]["rules"]}
    assert rules["java-frontier"]["when"] == "not until a leased group writes a frontier"
    assert api["housekeep_interval_s"] == 60
