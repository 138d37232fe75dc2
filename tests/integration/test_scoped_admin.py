"""An Admin scoped to some topics stays an Admin of those topics: access administration,
sensitive marks and silences of alerts that name no topic need a grant without scope;
an alert's silence is checked on its topic; cluster-wide reads still work."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from django.contrib.auth.models import Group, User
from django.test import Client

from dashboard.clusters import console_store
from dashboard.models import ApiToken, GroupTopicScope, SensitiveTopic
from dashboard.permissions import ADMIN, Action, actions_for, cluster_visible, has_action
from dashboard.services.audit import Actor
from tests.integration.dlq_support import role_user

pytestmark = [pytest.mark.redis, pytest.mark.django_db]


def _scoped_admin(name: str = "bob") -> User:
    """``name``'s only grant: a group with Admin's permissions on ``*/orders-*``."""
    role_user("someone", ADMIN)  # the roles exist
    group = Group.objects.create(name="scope:orders-admins")
    group.permissions.set(Group.objects.get(name=ADMIN).permissions.all())
    GroupTopicScope.objects.create(group=group, cluster="", pattern="orders-*")
    user = role_user(name, None)
    user.groups.add(group)
    return User.objects.get(pk=user.pk)


def _client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _alert(rule: str, entity: str) -> dict[str, Any]:
    return {
        "id": f"{rule}:{entity}",
        "cluster": "default",
        "rule": rule,
        "entity": entity,
        "severity": "warning",
        "message": f"{rule} on {entity}",
        "value": None,
        "state": "open",
        "since_ms": 1,
        "opened_at_ms": 2,
        "last_seen_ms": 2,
        "resolved_at_ms": None,
    }


@pytest.fixture
def open_alerts(console_r: redis.Redis) -> list[str]:
    alerts = [
        _alert("dlq_growth", "orders-eu"),
        _alert("dlq_growth", "payments"),
        _alert("collector", "default"),
    ]
    console_store().alerts_write("default", {a["id"]: a for a in alerts}, [], {})
    return [a["id"] for a in alerts]


def test_global_actions_need_a_grant_without_scope() -> None:
    bob = _scoped_admin()
    assert has_action(bob, Action.PURGE, cluster="default", topic="orders-eu")
    assert not has_action(bob, Action.PURGE, cluster="default", topic="payments")
    assert not has_action(bob, Action.MANAGE_ACCESS)
    assert not has_action(bob, Action.MANAGE_ACCESS, cluster="default")
    assert not has_action(bob, Action.SILENCE, cluster="default")
    # cluster-wide reads still answer "may see something here"
    assert has_action(bob, Action.VIEW)
    assert cluster_visible(bob, "default")
    assert actions_for(bob, cluster="default") == {Action.VIEW}
    assert has_action(role_user("ada", ADMIN), Action.MANAGE_ACCESS)


def test_scoped_admin_cannot_administer_access() -> None:
    SensitiveTopic.objects.create(cluster="", pattern="payments")
    bob = _scoped_admin()
    client = _client(bob)
    assert client.get("/access/").status_code == 403
    assert client.get("/access/users/bob/").status_code == 403
    assert b'href="/access/"' not in client.get("/alerts/").content  # no nav link
    gone = client.post("/access/sensitive/", {"pattern": "payments", "remove": "1"})
    assert gone.status_code == 403
    assert SensitiveTopic.objects.filter(pattern="payments").exists()
    promoted = client.post("/access/role/", {"username": "bob", "role": ADMIN, "reason": "me"})
    assert promoted.status_code == 403
    assert not bob.groups.filter(name=ADMIN).exists()
    _, token = ApiToken.issue(bob, read_only=False)
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    api = Client()
    assert api.get("/api/v1/access", **auth).status_code == 403
    body = {"username": "bob", "role": ADMIN, "reason": "me"}
    assert (
        api.post("/api/v1/access/role", body, content_type="application/json", **auth).status_code
        == 403
    )
    assert not bob.groups.filter(name=ADMIN).exists()


def test_user_access_lists_global_actions_apart() -> None:
    _scoped_admin()
    admin = _client(role_user("ada", ADMIN))
    page = admin.get("/access/users/bob/")
    assert b"Actions without a topic" in page.content
    who = admin.get("/api/v1/access/users/bob").json()
    assert who["global_actions"] == []
    assert "manage_access" in admin.get("/api/v1/access/users/ada").json()["global_actions"]


def test_silences_are_checked_on_the_alert_topic(open_alerts: list[str]) -> None:
    bob = _scoped_admin()
    client = _client(bob)
    form = {"kind": "silence", "duration": "1h", "reason": "on it"}
    ok = client.post("/alerts/mute/", {**form, "cluster": "default", "alert": open_alerts[0]})
    assert ok.status_code == 302
    for other in open_alerts[1:]:  # another topic's alert, an alert that names no topic
        refused = client.post("/alerts/mute/", {**form, "cluster": "default", "alert": other})
        assert refused.status_code == 403, other
    # not open, another topic: refused before telling whether it is open
    ghost = client.post("/alerts/mute/", {**form, "cluster": "default", "alert": "status:pay"})
    assert ghost.status_code == 403
    mutes = console_store().mutes_get("default", open_alerts)
    assert set(mutes) == {open_alerts[0]}
    # the API twin, and lifting
    _, token = ApiToken.issue(bob, read_only=False)
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}", "content_type": "application/json"}
    api = Client()
    body = {"cluster": "default", "alert": open_alerts[2], "duration": "1h", "reason": "x"}
    assert api.post("/api/v1/alerts/mute", body, **auth).status_code == 403
    admin = role_user("ada", ADMIN)
    from dashboard.services.alert_mutes import alert_mute

    alert_mute(
        Actor(admin),
        cluster="default",
        alert_id=open_alerts[2],
        kind="silence",
        duration="1h",
        reason="global admin",
    )
    lift = {"cluster": "default", "alert": open_alerts[2], "reason": "x"}
    assert api.post("/api/v1/alerts/unmute", lift, **auth).status_code == 403
    assert open_alerts[2] in console_store().mutes_get("default", [open_alerts[2]])
    lift = {"cluster": "default", "alert": open_alerts[0], "reason": "x"}
    assert api.post("/api/v1/alerts/unmute", lift, **auth).status_code == 200


def test_alerts_page_offers_only_the_alerts_one_may_silence(open_alerts: list[str]) -> None:
    html = _client(_scoped_admin()).get("/alerts/").content.decode()
    assert 'id="mute-alert"' in html
    form = html[html.index('id="mute-alert"') :]
    assert "dlq_growth:orders-eu" in form
    assert "collector:default" in html  # listed: a cluster-wide row bob may see
    assert "collector:default" not in form  # but not offered: muting it is global
    assert "payments" not in html  # another topic's alert is not even listed
    viewer_html = _client(role_user("vic", "Viewer")).get("/alerts/").content.decode()
    assert 'id="mute-alert"' not in viewer_html


def test_scoped_viewer_keeps_cluster_wide_reads(open_alerts: list[str]) -> None:
    role_user("someone", ADMIN)
    group = Group.objects.create(name="scope:orders-viewers")
    group.permissions.set(Group.objects.get(name="Viewer").permissions.all())
    GroupTopicScope.objects.create(group=group, cluster="default", pattern="orders-*")
    user = role_user("val", None)
    user.groups.add(group)
    client = _client(user)
    for url in ("/alerts/", "/collectors/", "/audit/", "/api/v1/alerts", "/api/v1/collectors"):
        assert client.get(url).status_code == 200, url
    ids = {a["id"] for a in client.get("/api/v1/alerts").json()["alerts"]}
    assert ids == {"dlq_growth:orders-eu", "collector:default"}
