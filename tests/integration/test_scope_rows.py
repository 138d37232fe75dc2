"""Topic scopes filter the rows of topic-less reads: audit page, exports and API,
clusters list, collectors, and a letter's "after replay" section (real Redis)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.test import Client

from dashboard.models import GroupTopicScope
from dashboard.permissions import Action, has_action
from dashboard.services.audit import Actor, audit_begin, audit_complete
from dashboard.services.dlq import ReplayTarget, dlq_replay
from tests.integration.dlq_support import add_letters, make_topic, role_user

pytestmark = [pytest.mark.redis, pytest.mark.django_db]


def _scoped(name: str, cluster: str, pattern: str) -> Client:
    role_user(f"seed-{name}", None)
    group = Group.objects.create(name=f"g-{name}")
    group.permissions.set(Group.objects.get(name="Viewer").permissions.all())
    GroupTopicScope.objects.create(group=group, cluster=cluster, pattern=pattern)
    user = role_user(name, None)
    user.groups.add(group)
    client = Client()
    client.force_login(user)
    return client


def _audit(topic: str, cluster: str = "default") -> None:
    intent = audit_begin(Actor(None, cluster=cluster, topic=topic), "dlq_purge", reason="r")
    audit_complete(intent, outcome="purged")


def test_audit_rows_are_filtered_by_scope_everywhere() -> None:
    _audit("orders-eu")
    _audit("payments")
    _audit("orders-eu", cluster="other")
    client = _scoped("v", "default", "orders-*")
    api = client.get("/api/v1/audit").json()
    assert [(e["cluster"], e["topic"]) for e in api["events"]] == [("default", "orders-eu")]
    page = client.get("/audit/").content.decode()
    assert "orders-eu" in page
    assert "payments" not in page
    csv_text = b"".join(client.get("/audit/export.csv").streaming_content).decode()
    assert "payments" not in csv_text
    assert "orders-eu" in csv_text
    json_text = b"".join(client.get("/audit/export.json").streaming_content).decode()
    assert "payments" not in json_text
    assert "orders-eu" in json_text


def test_cluster_scope_limits_cluster_wide_reads() -> None:
    client = _scoped("c", "elsewhere", "*")
    assert client.get("/api/v1/clusters").json()["clusters"] == []
    assert client.get("/clusters/default/").status_code == 403
    assert client.get("/api/v1/audit").json()["events"] == []


def test_after_replay_hides_a_target_topic_out_of_scope(r, mq_config) -> None:
    make_topic(mq_config, "orders-eu", 1)
    make_topic(mq_config, "payments", 1)
    [letter] = add_letters(r, mq_config, "orders-eu", 1, partitions=1)
    admin = role_user("admin", "Admin")
    assert has_action(admin, Action.REPLAY_TARGET, cluster="default", topic="orders-eu")
    dlq_replay(
        Actor(admin, cluster="default", topic="orders-eu"),
        dlq_id=letter,
        reason="move",
        target=ReplayTarget(topic="payments", partition=0),
    )
    client = _scoped("f", "default", "orders-*")
    page = client.get(f"/clusters/default/topics/orders-eu/dlq/{letter}/").content.decode()
    assert "outside your scope" in page
    assert "/topics/payments/" not in page
