"""What the audit log tells, and to whom: refused writes leave rate-limited ``denied``
rows; text filters are kept as a digest and length; scoped users read an action only
when every topic it names is theirs (real Redis, Django test client)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.test import Client

from dashboard.models import AuditEvent, AuditEventType, AuditPhase, GroupTopicScope
from dashboard.services import bulk_replay
from dashboard.services.audit import Actor, audit_begin, audit_complete, audit_record, text_digest
from dashboard.services.exports import export_start
from dashboard.services.retries import retries_act
from mqcore.clock import now_ms
from tests.integration.dlq_support import add_letters, make_topic, role_user
from tests.integration.retry_items import schedule

pytestmark = [pytest.mark.redis, pytest.mark.django_db]

SECRET = "4111111111111111"


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _denied() -> list[AuditEvent]:
    return list(
        AuditEvent.objects.filter(event_type=AuditEventType.ACCESS_DENIED, phase=AuditPhase.INTENT)
    )


# --- refused writes -------------------------------------------------------------------


def test_refused_writes_leave_denied_rows_on_pages_and_api(redis_url, mq_config) -> None:
    make_topic(mq_config, "orders", 1)
    viewer = _client(role_user("vic", "Viewer"))
    page = viewer.post("/clusters/default/topics/orders/dlq/purge/", {"confirm": "orders"})
    api = viewer.post(
        "/api/v1/clusters/default/topics/orders/dlq/purge",
        {"confirm": "orders", "reason": "r"},
        content_type="application/json",
    )
    access = viewer.post("/access/role/", {"user": "vic", "role": "Admin"})
    assert (page.status_code, api.status_code, access.status_code) == (403, 403, 403)
    rows = _denied()
    assert [(e.actor, e.cluster, e.topic) for e in rows] == [
        ("vic", "", ""),
        ("vic", "default", "orders"),
        ("vic", "default", "orders"),
    ]
    assert all(e.final_outcome == "denied" for e in rows)
    assert {e.detail["view"] for e in rows} == {"dlq-purge", "api-dlq-purge", "access-role"}
    assert viewer.get("/access/").status_code == 403  # a refused read is no audit row
    assert len(_denied()) == 3


def test_a_write_with_a_read_only_token_leaves_a_denied_row(redis_url) -> None:
    import io

    from django.core.management import call_command

    role_user("boss", "Admin")
    out = io.StringIO()
    call_command("api_token", "create", "boss", stdout=out, stderr=io.StringIO())
    auth = {"Authorization": f"Bearer {out.getvalue().strip()}"}
    assert Client().post("/api/v1/alerts/mute", {}, headers=auth).status_code == 403
    [row] = _denied()
    assert (row.actor, row.detail["error"]) == ("boss", "this API token is read-only")


def test_denied_rows_are_rate_limited_per_user(settings, redis_url, mq_config) -> None:
    settings.AUDIT_DENIED_PER_MINUTE = 3
    make_topic(mq_config, "orders", 1)
    mallory, other = _client(role_user("mallory", "Viewer")), _client(role_user("ovi", "Viewer"))
    body = {"user": "mallory", "role": "Admin"}
    for _ in range(8):
        assert mallory.post("/access/role/", body).status_code == 403
    assert other.post("/access/role/", {"user": "ovi", "role": "Admin"}).status_code == 403
    assert sorted(e.actor for e in _denied()) == ["mallory"] * 3 + ["ovi"]


# --- text filters ---------------------------------------------------------------------


def test_text_filters_are_kept_as_digest_and_length(redis_url, r, mq_config) -> None:
    make_topic(mq_config, "orders", 1)
    add_letters(r, mq_config, "orders", 2, partitions=1, payload=lambda i: f"card {SECRET} {i}")
    schedule(r, mq_config.keys, "orders", 0, f"card {SECRET}", due_ms=now_ms() + 3_600_000)
    operator = role_user("op", "Operator")
    export = export_start(
        Actor(operator, cluster="default", topic="orders"),
        kind="dlq",
        query={"text": SECRET, "format": "csv"},
    )
    "".join(export.chunks)
    retries_act(
        Actor(operator, cluster="default", topic="orders"),
        action="retry",
        all_matching=True,
        filters={"text": SECRET},
        reason="replay the card ones",
    )
    job = bulk_replay.dlq_bulk_preview(
        Actor(operator, cluster="default", topic="orders"),
        selection=bulk_replay.BulkSelection(text=SECRET),
    )
    bulk_replay.dlq_bulk_start(Actor(operator), job=job, reason="t", enqueue=False)
    digest = text_digest(SECRET)
    assert set(digest) == {"hmac_sha256", "len"} or set(digest) == {"sha256", "len"}
    assert digest["len"] == len(SECRET)
    filters = [
        (e.detail.get("filters") or e.detail.get("filter"))
        for e in AuditEvent.objects.filter(phase=AuditPhase.INTENT)
    ]
    assert len(filters) == 3
    assert all(f["text"] == digest for f in filters)
    everything = json.dumps([e.detail for e in AuditEvent.objects.all()])
    assert SECRET not in everything
    api = _client(role_user("v", "Viewer")).get("/api/v1/audit").content.decode()
    assert SECRET not in api


def test_older_rows_show_their_text_filter_as_digest_too(redis_url) -> None:
    audit_record(
        Actor(None, topic="orders"),
        AuditEventType.DLQ_EXPORT,
        detail={"filters": {"text": SECRET, "partition": 0}},
    )
    [event] = _client(role_user("v", "Viewer")).get("/api/v1/audit").json()["events"]
    assert event["detail"]["filters"] == {"text": text_digest(SECRET), "partition": 0}


# --- topic-less rows and the topics they name -----------------------------------------


def _scoped_client(name: str, cluster: str = "default") -> Client:
    group = Group.objects.create(name=f"g-{name}")
    group.permissions.set(Group.objects.get(name="Viewer").permissions.all())
    GroupTopicScope.objects.create(group=group, cluster=cluster, pattern="orders-*")
    user = role_user(name, None)
    user.groups.add(group)
    return _client(user)


def _housekeeper_run(*topics: str) -> None:
    intent = audit_begin(
        Actor(None, cluster="default"),
        AuditEventType.RETENTION_TRIM,
        reason=f"housekeeper {'+'.join(topics)}",
    )
    rows = [{"topic": t, "partition": 0, "deleted": 1} for t in topics]
    audit_complete(intent, outcome="trimmed", detail={"partitions": rows})


def _alert(alert_id: str) -> None:
    audit_record(
        Actor(None, cluster="default"),
        AuditEventType.ALERT_SILENCE,
        reason=f"silence {alert_id}",
        detail={"alert": alert_id},
    )


def _reasons(client: Client) -> set[str]:
    api = client.get("/api/v1/audit?limit=100").json()["events"]
    page = client.get("/audit/").content.decode()
    reasons = {e["reason"] for e in api}
    for reason in reasons:
        assert reason in page
    return reasons


def test_scoped_users_read_topic_less_rows_only_when_every_named_topic_is_theirs(
    redis_url,
) -> None:
    role_user("seed", None)  # the role groups
    _housekeeper_run("orders-eu")
    _housekeeper_run("orders-eu", "payments")
    _alert("status:orders-eu/billing")
    _alert("dlq_growth:payments")
    _alert("checkpoint_age:nightly-pipeline")  # names no topic it could be checked against
    _alert("collector:default")  # about the cluster, names no topic
    audit_record(
        Actor(None),
        AuditEventType.ROLE_CHANGE,
        reason="bob made Admin",
        detail={"change": "role", "user": "bob", "from": [], "to": "Admin"},
    )
    intent = audit_begin(
        Actor(None, cluster="default", topic="orders-eu"),
        AuditEventType.DLQ_REPLAY_TARGET,
        reason="replayed to payments",
        detail={"target_topic": "payments"},
    )
    audit_complete(intent, outcome="replayed", detail={"topic": "payments"})
    scoped = _reasons(_scoped_client("sam"))
    assert scoped == {
        "housekeeper orders-eu",
        "silence status:orders-eu/billing",
        "silence collector:default",
    }
    any_cluster = _scoped_client("sue", cluster="")  # reaches rows of no cluster too
    assert _reasons(any_cluster) == scoped
    page = any_cluster.get("/audit/").content.decode()
    assert "payments" not in page
    assert "bob made Admin" not in page
    everyone = _reasons(_client(role_user("una", "Viewer")))
    assert len(everyone) == 8


def test_the_migration_names_the_topics_of_existing_rows(redis_url) -> None:
    """Rows written before the named topics existed get them by the same rule."""
    import importlib
    from types import SimpleNamespace

    from django.apps import apps
    from django.db import connection

    from dashboard.models import AuditTopic

    _housekeeper_run("orders-eu", "payments")
    _alert("checkpoint_age:nightly-pipeline")
    before = sorted(AuditTopic.objects.values_list("event_id", "topic"))
    AuditTopic.objects.all().delete()
    migration = importlib.import_module("dashboard.migrations.0011_audit_topics_denied")
    migration.name_topics(apps, SimpleNamespace(connection=connection))
    assert sorted(AuditTopic.objects.values_list("event_id", "topic")) == before
    assert [t for _, t in before] == ["orders-eu", "payments", ""]
