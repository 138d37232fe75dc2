"""The demo soak's judgement (pure): durations, the incidents in the supervisor's output,
and which scheduled incident explains an alert; its webhook receiver (a local server)."""

from __future__ import annotations

import json
import time
import urllib.request

import pytest

from scripts.demo_settings import DemoSettings
from scripts.demo_soak import (
    PIPELINE,
    Alert,
    Incident,
    Receiver,
    cause_of,
    incident_of,
    parse_duration,
)

SETTINGS = DemoSettings()


def test_durations() -> None:
    assert [parse_duration(t) for t in ("30m", "2m", "90s", "45", "1.5h")] == [
        1800, 120, 90, 45, 5400
    ]  # fmt: skip
    for bad in ("", "0m", "-1m", "soon", "3d"):
        with pytest.raises(ValueError, match="duration"):
            parse_duration(bad)


def test_incidents_from_the_supervisor_lines() -> None:
    bounce = incident_of("demo             | orders-bounce crashes (SIGKILL)", 130.0)
    assert bounce == Incident("bounce", 130.0, "orders-bounce crashes (SIGKILL)")
    kill = incident_of("demo | forced restart of pipeline (SIGKILL; it restores)", 250.0)
    assert kill is not None
    assert kill.kind == "pipeline_kill"
    assert incident_of("orders-bounce    | orders-bounce crashes (SIGKILL)", 1.0) is None
    banner = "demo | orders-bounce crashes after 120s and every 300s, back after 60s"
    assert incident_of(banner, 9.0) is None
    assert incident_of("demo             | orders-bounce comes back", 190.0) is None


def _alert(rule: str, entity: str, at: float) -> Alert:
    return Alert(f"{rule}:{entity}", rule, entity, "warning", "m", at)


def test_causes() -> None:
    bounce = Incident("bounce", 120.0, "orders-bounce crashes (SIGKILL)")
    kill = Incident("pipeline_kill", 240.0, "forced restart of pipeline")
    seen = [bounce, kill]
    assert "poison" in cause_of(_alert("dlq_growth", "payments", 5.0), seen, SETTINGS)
    assert "bounce" in cause_of(_alert("status", "orders/billing", 500.0), seen, SETTINGS)
    assert "bounce" in cause_of(_alert("oldest_pending", "orders", 200.0), seen, SETTINGS)
    assert cause_of(_alert("status", "orders/billing", 100.0), seen, SETTINGS) == ""  # before
    late = 120.0 + SETTINGS.bounce_down_s + 300 + 120 + 1
    assert cause_of(_alert("status", "orders/billing", late), [bounce], SETTINGS) == ""
    assert cause_of(_alert("status", "payments/ledger", 200.0), seen, SETTINGS) == ""
    assert "pipeline" in cause_of(_alert("checkpoint_age", PIPELINE, 900.0), seen, SETTINGS)
    assert cause_of(_alert("checkpoint_age", PIPELINE, 200.0), [kill], SETTINGS) == ""
    assert cause_of(_alert("redis_memory", "redis", 300.0), seen, SETTINGS) == ""


def test_receiver_pairs_each_resolve_with_its_open_and_drops_bodies_that_are_not_json() -> None:
    receiver = Receiver(time.monotonic())
    alert = {"id": "lag:orders/g", "rule": "lag", "entity": "orders/g", "severity": "warning"}
    try:
        for body in (
            json.dumps({"event": "opened", "alert": {**alert, "message": "<b>grew</b>"}}),
            "not json",
            json.dumps({"event": "resolved", "alert": alert}),
        ):
            request = urllib.request.Request(receiver.url, data=body.encode(), method="POST")
            with urllib.request.urlopen(request, timeout=5) as answer:
                assert answer.status == 204
    finally:
        receiver.close()
    (opened,) = receiver.opened()
    assert (opened.id, opened.rule, opened.message) == ("lag:orders/g", "lag", "<b>grew</b>")
    assert opened.resolved_s is not None
