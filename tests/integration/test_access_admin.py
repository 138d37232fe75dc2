"""Access administration: roles, scoped groups and sensitive topics from the console, its
API and ``manage.py access``; validated, audited, Admin only; "who can see what"."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.core.exceptions import PermissionDenied
from django.core.management import CommandError, call_command
from django.test import Client

from dashboard.models import ApiToken, AuditEvent, AuditEventType, SensitiveTopic
from dashboard.permissions import payload_visible, role_of, topic_visible
from dashboard.selectors.access import user_access
from dashboard.services import access as svc
from dashboard.services.audit import Actor
from mqcore.config import MQConfig
from tests.integration.dlq_support import make_topic, role_user
from tests.integration.pages_support import collect

pytestmark = [pytest.mark.redis, pytest.mark.django_db]


@pytest.fixture
def topics(mq_config: MQConfig) -> None:
    for name in ("orders", "payments-eu", "payments-us"):
        make_topic(mq_config, name, 1)
    collect()


def _fresh(name: str) -> User:
    return User.objects.get(username=name)  # permissions are cached per user object


def test_scoped_group_and_sensitive_topic_change_what_a_user_sees(topics: None) -> None:
    admin = role_user("ada", "Admin")
    vic = role_user("vic", None)
    assert not topic_visible(vic, "default", "orders")
    svc.group_put(
        Actor(admin),
        name="payments-viewers",
        role="Viewer",
        scopes=["default/payments-*"],
        reason="team access",
    )
    svc.member_set(Actor(admin), group="payments-viewers", username="vic", member=True)
    vic = _fresh("vic")
    assert topic_visible(vic, "default", "payments-eu")
    assert not topic_visible(vic, "default", "orders")
    assert payload_visible(vic, "default", "payments-eu")
    svc.sensitive_add(Actor(admin), cluster="*", pattern="payments-*", note="card data")
    assert not payload_visible(_fresh("vic"), "default", "payments-eu")
    view = user_access(user=admin, username="vic")
    rows = {t["topic"]: t for t in view["clusters"][0]["topics"]}
    assert view["scopes"] == ["default/payments-*"]
    assert (rows["orders"]["visible"], rows["payments-eu"]["masked"]) == (False, True)
    assert rows["payments-us"]["actions"] == ["view"]
    assert view["clusters"][0]["visible"] == 2
    changes = [e.detail["change"] for e in AuditEvent.objects.filter(
        event_type=AuditEventType.ROLE_CHANGE, phase="intent").order_by("id")]  # fmt: skip
    assert changes == ["group", "member", "sensitive-add"]
    svc.role_set(Actor(admin), username="vic", role="Operator")
    assert role_of(_fresh("vic")) == "Operator"
    assert payload_visible(_fresh("vic"), "default", "payments-eu")  # Operators see payloads
    svc.sensitive_remove(Actor(admin), cluster="", pattern="payments-*")
    svc.group_delete(Actor(admin), name="scope:payments-viewers")
    assert not Group.objects.filter(name="scope:payments-viewers").exists()


@pytest.mark.parametrize(
    ("call", "kwargs", "message"),
    [
        ("role_set", {"username": "nobody-here", "role": "Viewer"}, "unknown user"),
        ("role_set", {"username": "vic", "role": "Root"}, "role"),
        ("group_put", {"name": "a:b", "role": "Viewer", "scopes": ["x"]}, "group name"),
        ("group_put", {"name": "g", "role": "Viewer", "scopes": ["nope/x"]}, "unknown cluster"),
        ("group_put", {"name": "g", "role": "Viewer", "scopes": ["default/a b"]}, "pattern"),
        ("group_put", {"name": "g", "role": "", "scopes": ["x"]}, "needs a role"),
        ("group_put", {"name": "g", "role": "Viewer", "scopes": []}, "at least one"),
        ("member_set", {"group": "missing", "username": "vic", "member": True}, "no scoped"),
        ("sensitive_add", {"cluster": "", "pattern": "<script>"}, "pattern"),
        ("sensitive_remove", {"cluster": "", "pattern": "never"}, "not marked"),
    ],
)
def test_bad_input_writes_nothing(call: str, kwargs: dict[str, Any], message: str) -> None:
    admin = role_user("ada", "Admin")
    role_user("vic", "Viewer")
    groups, sensitive = Group.objects.count(), SensitiveTopic.objects.count()
    with pytest.raises(ValueError, match=message):
        getattr(svc, call)(Actor(admin), **kwargs)
    assert (Group.objects.count(), SensitiveTopic.objects.count()) == (groups, sensitive)
    assert not AuditEvent.objects.filter(event_type=AuditEventType.ROLE_CHANGE).exists()


def test_only_admins_manage_access(client: Client) -> None:
    for role in ("Viewer", "Operator"):
        user = role_user(role.lower(), role)
        with pytest.raises(PermissionDenied):
            svc.sensitive_add(Actor(user), cluster="", pattern="x")
        client.force_login(user)
        assert client.get("/access/").status_code == 403
        assert b'href="/access/"' not in client.get("/alerts/").content
    client.force_login(role_user("ada", "Admin"))
    page = client.get("/access/")
    assert page.status_code == 200
    assert b'href="/access/"' in page.content
    done = client.post("/access/sensitive/", {"pattern": "pay*", "note": "<b>pci</b>"})
    assert (done.status_code, done["Location"]) == (302, "/access/#sensitive")
    html = client.get("/access/").content.decode()
    assert "&lt;b&gt;pci&lt;/b&gt;" in html
    bad = client.post("/access/groups/", {"name": "g", "role": "Viewer", "scopes": "nope/x"})
    assert bad.status_code == 400
    assert b"unknown cluster" in bad.content
    assert client.get("/access/users/viewer/").status_code == 200  # a viewer from above
    assert client.get("/access/users/ghost/").status_code == 404


def test_api_twins(topics: None) -> None:
    c = Client()
    admin = ApiToken.issue(role_user("ada", "Admin"), read_only=False)[1]
    viewer = ApiToken.issue(role_user("vic", "Viewer"), read_only=False)[1]
    auth = {"HTTP_AUTHORIZATION": f"Bearer {admin}"}
    assert c.get("/api/v1/access", HTTP_AUTHORIZATION=f"Bearer {viewer}").status_code == 403
    made = c.post("/api/v1/access/groups", {"name": "eu", "role": "Operator",
                  "scopes": ["default/*-eu"], "reason": "eu team"},
                  content_type="application/json", **auth)  # fmt: skip
    assert made.status_code == 200
    assert made.json()["group"] == "scope:eu"
    assert c.post("/api/v1/access/members", {"group": "eu", "username": "vic", "member": True},
                  content_type="application/json", **auth).status_code == 200  # fmt: skip
    assert c.post("/api/v1/access/role", {"username": "vic", "role": "none"},
                  content_type="application/json", **auth).status_code == 200  # fmt: skip
    who = c.get("/api/v1/access/users/vic", **auth).json()
    rows = {t["topic"]: t for t in who["clusters"][0]["topics"]}
    assert [t for t, r in rows.items() if r["visible"]] == ["payments-eu"]
    assert "replay" in rows["payments-eu"]["actions"]
    assert c.post("/api/v1/access/sensitive", {"pattern": "a b"},
                  content_type="application/json", **auth).status_code == 400  # fmt: skip
    overview = c.get("/api/v1/access", **auth).json()
    assert {g["name"]: g["role"] for g in overview["groups"]}["scope:eu"] == "Operator"


def test_manage_py_access(topics: None) -> None:
    role_user("vic", None)
    out = StringIO()
    call_command("access", "--reason", "ticket-7", "group", "put", "pay", "--role", "Viewer",
                 "--scope", "default/payments-*", stdout=out)  # fmt: skip
    call_command("access", "member", "add", "scope:pay", "vic", stdout=out)
    call_command("access", "sensitive", "add", "payments-us", "--cluster", "default", stdout=out)
    out = StringIO()
    call_command("access", "--json", "show", "--user", "vic", stdout=out)
    view = json.loads(out.getvalue())
    rows = {t["topic"]: t for t in view["clusters"][0]["topics"]}
    assert (rows["payments-us"]["masked"], rows["payments-eu"]["masked"]) == (True, False)
    intent = AuditEvent.objects.filter(phase="intent").order_by("id").first()
    assert intent is not None
    assert (intent.actor, intent.reason) == ("system", "ticket-7")
    with pytest.raises(CommandError, match="unknown user"):
        call_command("access", "role", "ghost", "Viewer")
    out = StringIO()
    call_command("access", "show", stdout=out)
    assert "group scope:pay: Viewer on default/payments-*" in out.getvalue()
