"""Alert silences and acknowledgements, the rewind rule, end to end: real Redis, real
collector passes, a real HTTP webhook receiver, the real Django test client."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest
import redis
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from dashboard.clusters import console_store
from dashboard.collectors.notify import alert_notify
from dashboard.collectors.passes import collect_cluster
from dashboard.models import AuditEvent, AuditEventType
from mqcore.config import MQConfig
from mqcore.producer import OutgoingMessage, Producer
from mqcore.topics import Topics
from tests.integration.dlq_support import role_user

pytestmark = [pytest.mark.redis, pytest.mark.django_db]

ALERT = "dlq_growth:orders"


class _Hook(BaseHTTPRequestHandler):
    received: list[dict[str, Any]] = []

    def do_POST(self) -> None:
        size = int(self.headers.get("Content-Length") or 0)
        self.received.append(json.loads(self.rfile.read(size)))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def webhook(settings) -> Iterator[list[dict[str, Any]]]:
    server = HTTPServer(("127.0.0.1", 0), _Hook)
    received: list[dict[str, Any]] = []
    _Hook.received = received
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    settings.ALERT_WEBHOOK_URL = f"http://127.0.0.1:{server.server_address[1]}/hook"
    yield received
    server.shutdown()
    server.server_close()


def _pass() -> list[str]:
    """One stored pass; its notifications sent to the webhook like the Celery task does."""
    result = collect_cluster("default", claim=False)
    assert result.stored
    for event in result.events:
        alert_notify(event)
    return [f"{e['event']} {e['alert']['id']}" for e in result.events]


@pytest.fixture
def dlq_alert(settings, mq_config: MQConfig, r: redis.Redis, console_r: redis.Redis) -> None:
    """An open dlq_growth alert on topic orders."""
    settings.ALERT_DLQ_GROWTH = 1
    settings.DLQ_GROWTH_WINDOW_S = 0
    Topics(mq_config).create("orders", 1)
    collect_cluster("default", claim=False)
    r.xadd(mq_config.keys.dlq("orders"), {"payload": "x"})


def _admin(name: str = "boss") -> Client:
    client = Client()
    client.force_login(role_user(name, "Admin"))
    return client


def _grow(r: redis.Redis, mq_config: MQConfig) -> None:
    r.xadd(mq_config.keys.dlq("orders"), {"payload": "y"})


def test_silence_suppresses_the_webhook_and_shows_on_the_page(
    dlq_alert: None, webhook: list[dict[str, Any]], r: redis.Redis, mq_config: MQConfig
) -> None:
    assert _pass() == [f"opened {ALERT}"]
    assert [e["event"] for e in webhook] == ["opened"]
    admin = _admin()
    target = json.dumps(["default", ALERT])
    resp = admin.post(
        "/alerts/mute/",
        {"target": target, "kind": "silence", "duration": "1h", "reason": "known <b>DLQ</b>"},
    )
    assert resp.status_code == 302
    html = admin.get("/alerts/").content.decode()
    assert f'data-alert="{ALERT}" data-muted="silence"' in html
    assert "silenced until " in html
    assert " UTC</time> by boss: known &lt;b&gt;DLQ&lt;/b&gt;" in html
    assert "<b>DLQ</b>" not in html
    # resolves (no growth), re-opens, resolves: nothing reaches the webhook while silenced
    assert _pass() == []
    _grow(r, mq_config)
    assert _pass() == []
    assert console_store().alerts_list(["default"])[0]["id"] == ALERT  # still listed, open
    api = admin.get("/api/v1/alerts").json()["alerts"]
    assert api[0]["mute"]["kind"] == "silence"
    assert api[0]["mute"]["by"] == "boss"
    body = admin.get("/metrics").content.decode()
    muted = {
        frozenset(s.labels.items()): s.value
        for fam in text_string_to_metric_families(body)
        for s in fam.samples
        if s.name == "opsdash_alerts_silenced"
    }
    key = {("cluster", "default"), ("rule", "dlq_growth"), ("severity", "warning")}
    assert muted[frozenset({*key, ("kind", "silence")})] == 1.0
    assert len(webhook) == 1
    # lifted: the next close is notified again
    assert admin.post("/alerts/unmute/", {"cluster": "default", "alert": ALERT}).status_code == 302
    assert _pass() == [f"resolved {ALERT}"]
    assert [e["event"] for e in webhook] == ["opened", "resolved"]
    kinds = list(AuditEvent.objects.filter(phase="outcome").values_list("event_type", "outcome"))
    assert (AuditEventType.ALERT_SILENCE, "silenced") in kinds
    assert (AuditEventType.ALERT_UNSILENCE, "lifted") in kinds


def test_acknowledgement_clears_when_the_alert_resolves(
    dlq_alert: None, webhook: list[dict[str, Any]], r: redis.Redis, mq_config: MQConfig
) -> None:
    assert _pass() == [f"opened {ALERT}"]
    admin = _admin()
    resp = admin.post(
        "/api/v1/alerts/mute",
        {"cluster": "default", "alert": ALERT, "kind": "ack", "duration": "4h", "reason": "on it"},
        content_type="application/json",
    )
    assert resp.status_code == 200, resp.content
    assert resp.json()["mute"]["kind"] == "ack"
    assert 'data-muted="ack"' in admin.get("/alerts/").content.decode()
    assert _pass() == []  # its close is muted
    _grow(r, mq_config)
    assert _pass() == [f"opened {ALERT}"]  # a new opening: the acknowledgement is gone
    assert "data-muted" not in admin.get("/alerts/").content.decode()
    assert [e["event"] for e in webhook] == ["opened", "opened"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"alert": "dlq_growth:nope", "duration": "1h", "reason": "x"}, "no open alert"),
        ({"alert": ALERT, "duration": "soon", "reason": "x"}, "duration"),
        ({"alert": ALERT, "duration": "0m", "reason": "x"}, "duration"),
        ({"alert": ALERT, "duration": "30d", "reason": "x"}, "duration"),
        ({"alert": ALERT, "duration": "1h", "reason": "  "}, "reason"),
        ({"alert": ALERT, "duration": "1h", "reason": "x", "kind": "mute"}, "kind"),
        ({"alert": ALERT, "duration": "1h", "reason": "x", "cluster": "elsewhere"}, "cluster"),
    ],
)
def test_bad_input_is_400_and_writes_nothing(
    dlq_alert: None, console_r: redis.Redis, body: dict[str, str], message: str
) -> None:
    _pass()
    admin = _admin()
    resp = admin.post(
        "/api/v1/alerts/mute", {"cluster": "default", **body}, content_type="application/json"
    )
    assert resp.status_code == 400
    assert message in resp.json()["error"]
    page = admin.post("/alerts/mute/", {"cluster": "default", **body})
    assert page.status_code == 400
    assert message in page.content.decode()
    assert not list(console_r.scan_iter(match="*alert-mute*"))
    assert not AuditEvent.objects.exists()
    unmute = admin.post("/alerts/unmute/", {"cluster": "default", "alert": ALERT})
    assert unmute.status_code == 400  # nothing to lift


@pytest.mark.parametrize("role", ["Viewer", "Operator"])
def test_only_admins_silence(dlq_alert: None, role: str) -> None:
    _pass()
    client = Client()
    client.force_login(role_user(role.lower(), role))
    body = {"cluster": "default", "alert": ALERT, "duration": "1h", "reason": "x"}
    assert client.post("/alerts/mute/", body).status_code == 403
    assert client.post("/alerts/unmute/", body).status_code == 403
    api = client.post("/api/v1/alerts/mute", body, content_type="application/json")
    assert api.status_code == 403
    assert "mute-alert" not in client.get("/alerts/").content.decode()  # no form shown
    assert set(AuditEvent.objects.values_list("outcome", flat=True)) == {"unknown", "denied"}
    assert not AuditEvent.objects.exclude(event_type="access.denied").exists()  # refusals only


def test_rewind_alerts_at_once_and_only_once(
    settings, mq_config: MQConfig, r: redis.Redis, console_r: redis.Redis
) -> None:
    settings.ALERT_STATUS_FOR_S = 0  # the generic status rule would fire at once too
    Topics(mq_config).create("orders", 1)
    ids = [
        m.id
        for m in Producer(mq_config).send_many(
            "orders", [OutgoingMessage(f"m{i}") for i in range(5)]
        )
    ]
    key = mq_config.keys.partition("orders", 0)
    r.xreadgroup("default-group", "c1", {key: ">"}, count=5)
    r.xack(key, "default-group", *ids)
    assert _pass() == []
    r.xgroup_setid(key, "default-group", ids[1])  # the group goes back 3 entries
    events = _pass()
    assert events == ["opened rewind:orders/default-group"]
    (alert,) = console_store().alerts_list(["default"])
    assert alert["severity"] == "warning"
    assert f"to {ids[1]}" in alert["message"]
    assert "partition 0" in alert["message"]
