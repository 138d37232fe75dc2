"""Alert rules and open/resolved transitions (pure), and the webhook notifier's retries."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from types import MappingProxyType

import pytest

from dashboard.alerts import AlertThresholds, Condition, alert_conditions, alert_transition
from tests.snapshot_parts import snapshot_of

TH = AlertThresholds(
    status_for_ms=60_000, dlq_growth=1, oldest_pending_ms=10_000,
    checkpoint_age_ms=30_000, collector_failures=2,
)  # fmt: skip
NOW = 10_000_000
MARK = {
    "name": "s",
    "last_checkpoint_ms": None,
    "checkpoint_age_ms": None,
    "failed_checkpoints": 0,
    "last_failed_ms": None,
    "health": "ok",
    "health_reason": "",
}


def snap(**topic_fields: object) -> dict:
    topic = {
        "topic": "orders", "dlq_length": 3, "dlq_growth": None, "oldest_pending_ms": None,
        "error": None,
        "groups": [{"group": "g", "status": "OK", "status_reason": "fine"}],
        **topic_fields,
    }  # fmt: skip
    return {"taken_at_ms": NOW, "topics": [topic], "pipelines": []}


@pytest.mark.parametrize(
    ("snapshot", "health", "expected"),
    [
        (snap(), {}, set()),
        (snap(groups=[{"group": "g", "status": "STOP", "status_reason": "x"}]), {},
         {"status:orders/g"}),
        (snap(groups=[{"group": "g", "status": "UNKNOWN", "status_reason": "x"}]), {}, set()),
        (snap(dlq_growth=2), {}, {"dlq_growth:orders"}),
        (snap(dlq_growth=0), {}, set()),
        (snap(oldest_pending_ms=20_000), {}, {"oldest_pending:orders"}),
        (snap(oldest_pending_ms=5_000), {}, set()),
        ({**snap(), "pipelines": [{"pipeline": "p", "last_completed_at_ms": NOW - 60_000}]}, {},
         {"checkpoint_age:p"}),
        ({**snap(), "pipelines": [{"pipeline": "p", "last_completed_at_ms": NOW - 1_000}]}, {},
         set()),
        (None, {"consecutive_errors": 2, "error": "ConnectionError"}, {"collector:collector"}),
        (None, {"consecutive_errors": 1}, set()),
        (snap(), {"redis_restart": {"at_ms": NOW, "missing_groups": ["orders/g"]}},
         {"redis_restart:redis"}),
    ],
    ids=["healthy", "stop", "unknown-is-not-alerted", "dlq-grew", "dlq-flat", "old-pending",
         "young-pending", "old-checkpoint", "fresh-checkpoint", "collector-failing",
         "one-failure", "redis-restart"],
)  # fmt: skip
def test_conditions(snapshot: dict | None, health: dict, expected: set[str]) -> None:
    snapshot_struct = snapshot_of(snapshot) if snapshot is not None else None
    assert {c.id for c in alert_conditions(snapshot_struct, health, TH)} == expected


def test_rewind_names_what_went_back_and_idle_pipeline_groups_are_not_alerted() -> None:
    parts = [{"partition": p, "status": "REWIND", "status_reason": f"back {p}"} for p in range(6)]
    parts[3] = MappingProxyType(parts[3])  # any mapping
    parts.append({"partition": 9, "status": "STALL"})
    groups = [
        {"group": "g", "status": "STALL", "status_reason": "x", "partitions": parts},
        {"group": "p", "status": "STALL", "status_reason": "x", "pipeline": MARK},
        {"group": "q", "status": "STOP", "status_reason": "x", "pipeline": MARK},
    ]
    got = {c.id: c for c in alert_conditions(snapshot_of(snap(groups=groups)), {}, TH)}
    assert set(got) == {"rewind:orders/g", "status:orders/g"}
    assert got["rewind:orders/g"].value == 6.0
    assert "partition 3: back 3" in got["rewind:orders/g"].message
    assert got["rewind:orders/g"].message.endswith("(and 1 more partitions)")


def test_status_alert_opens_after_for_time_and_resolves() -> None:
    cond = Condition("status", "orders/g", "critical", "orders/g is STOP")
    kw = {"cluster": "c", "for_ms": {"status": 60_000}, "evaluated_rules": {"status"}}
    t1 = alert_transition({}, {}, [cond], now_ms=NOW, **kw)
    assert t1.opened == []
    assert t1.pending == {"status:orders/g": NOW}
    t2 = alert_transition(t1.open, t1.pending, [cond], now_ms=NOW + 30_000, **kw)
    assert t2.opened == []
    t3 = alert_transition(t2.open, t2.pending, [cond], now_ms=NOW + 60_000, **kw)
    assert [a["id"] for a in t3.opened] == ["status:orders/g"]
    assert t3.open["status:orders/g"]["since_ms"] == NOW
    t4 = alert_transition(t3.open, t3.pending, [cond], now_ms=NOW + 70_000, **kw)
    assert t4.opened == []
    assert "status:orders/g" in t4.open
    t5 = alert_transition(t4.open, t4.pending, [], now_ms=NOW + 80_000, **kw)
    assert t5.open == {}
    assert t5.resolved[0]["state"] == "resolved"
    assert t5.resolved[0]["resolved_at_ms"] == NOW + 80_000


def test_condition_that_flaps_never_opens() -> None:
    cond = Condition("status", "orders/g", "warning", "WARN")
    kw = {"cluster": "c", "for_ms": {"status": 60_000}, "evaluated_rules": {"status"}}
    t1 = alert_transition({}, {}, [cond], now_ms=NOW, **kw)
    t2 = alert_transition(t1.open, t1.pending, [], now_ms=NOW + 40_000, **kw)
    t3 = alert_transition(t2.open, t2.pending, [cond], now_ms=NOW + 70_000, **kw)
    assert t3.opened == []
    assert t3.pending == {"status:orders/g": NOW + 70_000}


def test_failed_pass_keeps_alerts_it_cannot_judge() -> None:
    cond = Condition("dlq_growth", "orders", "warning", "grew")
    opened = alert_transition(
        {}, {}, [cond], cluster="c", now_ms=NOW, for_ms={}, evaluated_rules={"dlq_growth"}
    )
    later = alert_transition(
        opened.open, {}, [], cluster="c", now_ms=NOW + 1, for_ms={},
        evaluated_rules={"collector"},
    )  # fmt: skip
    assert "dlq_growth:orders" in later.open
    assert later.resolved == []


class _Hook(BaseHTTPRequestHandler):
    fail_first = 0
    received: list[dict] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if _Hook.fail_first > 0:
            _Hook.fail_first -= 1
            self.send_response(503)
        else:
            _Hook.received.append(body)
            self.send_response(204)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def hook_url() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _Hook)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Hook.received = []
    yield f"http://127.0.0.1:{server.server_port}/hook"
    server.shutdown()
    server.server_close()


def test_webhook_retries_until_delivered(hook_url: str) -> None:
    from dashboard.collectors.notify import webhook_post

    _Hook.fail_first = 2
    ok = webhook_post(hook_url, {"event": "opened", "alert": {"id": "x"}}, backoff_s=0.01)
    assert ok
    assert _Hook.received == [{"event": "opened", "alert": {"id": "x"}}]


def test_webhook_gives_up_and_refuses_other_schemes(hook_url: str) -> None:
    from dashboard.collectors.notify import webhook_post

    _Hook.fail_first = 5
    assert not webhook_post(hook_url, {"event": "resolved"}, attempts=2, backoff_s=0.01)
    with pytest.raises(ValueError, match="http"):
        webhook_post("file:///etc/passwd", {})


def test_redis_alerts_and_the_cli_share_one_risk_rule() -> None:
    from mqcore.admin.probes import MEMORY_SHARE_RISK, health_risks

    calm = {"maxmemory_policy": "noeviction", "evicting_policy": False, "evicted_keys": 0,
            "memory_share": MEMORY_SHARE_RISK - 0.01}  # fmt: skip
    assert health_risks(calm) == []
    assert alert_conditions(None, {"redis": calm}, TH) == []
    full = {**calm, "memory_share": MEMORY_SHARE_RISK}
    assert health_risks(full) == ["memory"]
    assert [c.rule for c in alert_conditions(None, {"redis": full}, TH)] == ["redis_memory"]
    evicted = {**calm, "evicted_keys": 3}  # noeviction now, but keys went before
    assert health_risks(evicted) == ["eviction"]
    lru = {**calm, "maxmemory_policy": "allkeys-lru", "evicting_policy": True}
    assert health_risks(lru) == ["eviction"]
    assert [c.rule for c in alert_conditions(None, {"redis": lru}, TH)] == ["redis_eviction"]
    assert health_risks({"cluster": True}) == []
    assert health_risks({**calm, "memory_share": None}) == []


def test_redis_restart_alert_names_no_group() -> None:
    """The alert reaches every viewer of the cluster and the webhooks: a count, not the groups
    (topics of other teams); the collectors page lists them filtered by visibility."""
    health = {"redis_restart": {"at_ms": NOW, "missing_groups": ["payments/billing", "orders/g"]}}
    (cond,) = alert_conditions(None, health, TH)
    assert "payments" not in cond.message
    assert "2 groups missing" in cond.message


def test_oldest_pending_names_the_entry_and_its_consumer() -> None:
    """The alert says which entry is oldest and who holds it (the most idle partition's)."""
    parts = [
        {"partition": 0, "last_delivered_id": "9-0", "lag": 0, "lag_ms": 0, "pending": 1,
         "lag_exact": True, "oldest_pending_ms": 12_000, "oldest_pending_id": "3-0",
         "oldest_pending_consumer": "c-young"},
        {"partition": 1, "last_delivered_id": "9-0", "lag": 0, "lag_ms": 0, "pending": 2,
         "lag_exact": True, "oldest_pending_ms": 20_000, "oldest_pending_id": "1-0",
         "oldest_pending_consumer": "<b>stuck</b>" + "x" * 500},
    ]  # fmt: skip
    groups = [{"group": "g", "status": "OK", "status_reason": "", "partitions": parts}]
    (alert,) = alert_conditions(snapshot_of(snap(oldest_pending_ms=20_000, groups=groups)), {}, TH)
    assert alert.message.startswith("orders: oldest pending entry idle 20 s (> 10 s): entry 1-0")
    assert "(group g, partition 1), held by consumer <b>stuck</b>x" in alert.message
    assert len(alert.message) < 400  # a long name is cut
    (bare,) = alert_conditions(snapshot_of(snap(oldest_pending_ms=20_000)), {}, TH)
    assert bare.message == "orders: oldest pending entry idle 20 s (> 10 s)"
