"""The incident diffs between two collector passes (pure functions)."""

from __future__ import annotations

from typing import Any

from msgspec.structs import replace

from dashboard.collectors.incidents import (
    checkpoint_events,
    collector_failure_event,
    collector_gap_event,
    consumer_events,
    dlq_events,
    dlq_growth_events,
    incident_diff,
    lease_events,
    redis_restart_event,
    status_events,
)
from mqcore.models import ClusterSnapshot, PipelineSummary
from tests.snapshot_parts import snapshot_of

NOW = 1_767_225_600_000


def _snap(status: str = "OK", dlq: int = 0, consumers: tuple[str, ...] = ("a",), **extra: Any):
    return snapshot_of(
        {
            "topics": [
                {
                    "topic": "orders",
                    "dlq_length": dlq,
                    "groups": [{"group": "billing", "status": status}],
                    "consumers": [{"group": "billing", "name": n} for n in consumers],
                    "leases": [],
                    **extra,
                }
            ],
            "pipelines": [],
        }
    )


def test_status_change_and_rewind_text() -> None:
    _, memory = status_events(None, _snap("OK"), NOW)
    events, _ = status_events(memory, _snap("REWIND"), NOW)
    assert len(events) == 1
    e = events[0]
    assert (e["kind"], e["topic"], e["group"], e["data"]) == (
        "status", "orders", "billing", {"from": "OK", "to": "REWIND"}
    )  # fmt: skip
    assert "delivered again" in e["text"]
    assert status_events(memory, _snap("OK"), NOW)[0] == []


def test_status_events_in_topic_and_group_order_only_for_changes() -> None:
    def snap(statuses: dict[str, str | None]) -> ClusterSnapshot:
        groups = [{"group": g, "status": s} for g, s in statuses.items()]
        topics = [{"topic": "t", "groups": groups}, {"topic": "", "groups": groups}]
        return snapshot_of({"topics": topics})

    _, memory = status_events(None, snap({"b": "OK", "a": "OK", "c": "STALL"}), NOW)
    events, memory = status_events(
        memory, snap({"c": None, "b": "STOP", "a": "OK", "d": "ERR"}), NOW
    )
    assert [(e["group"], e["data"]) for e in events] == [
        ("b", {"from": "OK", "to": "STOP"}), ("c", {"from": "STALL", "to": "UNKNOWN"})
    ]  # fmt: skip
    assert memory == {"t\x1fc": "UNKNOWN", "t\x1fb": "STOP", "t\x1fa": "OK", "t\x1fd": "ERR"}


def test_lease_changes_become_events() -> None:
    change = {"at_ms": NOW, "group": "billing", "partition": 3, "event": "expired",
              "owner": None, "previous_owner": "orders-b", "epoch": 7}  # fmt: skip
    (e,) = lease_events({"orders": [change]})
    assert (e["kind"], e["partition"], e["severity"]) == ("lease", 3, "warning")
    assert "expired (owner orders-b)" in e["text"]
    assert e["data"]["previous_owner"] == "orders-b"


def test_consumers_join_and_leave_and_errored_topic_keeps_memory() -> None:
    _, memory = consumer_events(None, _snap(consumers=("a", "b")), NOW)
    events, memory = consumer_events(memory, _snap(consumers=("b", "c")), NOW)
    assert [(e["data"]["consumer"], e["data"]["change"]) for e in events] == [
        ("a", "left"), ("c", "joined")
    ]  # fmt: skip
    errored = _snap(consumers=(), error="boom")
    assert consumer_events(memory, errored, NOW)[0] == []


def test_dlq_burst_threshold() -> None:
    _, memory = dlq_events(None, _snap(dlq=5), NOW, burst=10)
    assert dlq_events(memory, _snap(dlq=14), NOW, burst=10)[0] == []
    (e,), _ = dlq_events(memory, _snap(dlq=45), NOW, burst=10)
    assert e["data"] == {"added": 40, "length": 45}
    assert e["text"].startswith("40 dead letters")


def test_dlq_growth_starts_and_stops_below_a_burst() -> None:
    """A steady trickle (never a burst): one event when growth starts, one when it ends."""
    _, memory = dlq_growth_events(None, _snap(dlq=1, dlq_growth=1), NOW, threshold=1)
    assert memory == ["orders"]  # the first pass only records
    _, memory = dlq_growth_events([], _snap(dlq=0, dlq_growth=0), NOW, threshold=1)
    (start,), memory = dlq_growth_events(memory, _snap(dlq=2, dlq_growth=2), NOW, threshold=1)
    assert (start["kind"], start["topic"], start["severity"]) == ("dlq", "orders", "warning")
    assert start["data"] == {"change": "growth_started", "added": 2, "length": 2}
    assert dlq_growth_events(memory, _snap(dlq=3, dlq_growth=3), NOW, threshold=1)[0] == []
    errored = _snap(dlq=3, dlq_growth=None, error="timeout")
    assert dlq_growth_events(memory, errored, NOW, threshold=1) == ([], ["orders"])
    (end,), memory = dlq_growth_events(memory, _snap(dlq=3, dlq_growth=0), NOW, threshold=1)
    assert (end["data"]["change"], end["severity"]) == ("growth_stopped", "info")
    assert memory == []
    below = _snap(dlq=5, dlq_growth=2)
    assert dlq_growth_events([], below, NOW, threshold=3) == ([], [])


def test_checkpoint_failure_and_restore() -> None:
    p = PipelineSummary("totals", topic="orders", group="spark")
    _, memory = checkpoint_events(None, [p], NOW)
    failed = replace(p, last_failed_id=4, last_failed_at_ms=NOW - 5, last_failure_reason="x")
    (e,), memory = checkpoint_events(memory, [failed], NOW)
    assert (e["at_ms"], e["severity"]) == (NOW - 5, "critical")
    assert "checkpoint 4 failed" in e["text"]
    restored = replace(failed, last_restore_id=4, last_restore_at_ms=NOW + 10**9)
    (r,), _ = checkpoint_events(memory, [restored], NOW)
    assert (r["data"]["change"], r["at_ms"]) == ("restored", NOW)  # a future time is not trusted


def test_collector_gap_failure_and_redis_restart() -> None:
    assert collector_gap_event(NOW - 15_000, NOW, 10_000) is None
    gap = collector_gap_event(NOW - 61_000, NOW, 10_000)
    assert gap is not None
    assert (gap["topic"], gap["data"]["gap_ms"]) == ("", 61_000)
    assert collector_failure_event("ConnectionError: x", NOW, 1) is not None
    assert collector_failure_event("ConnectionError: x", NOW, 2) is None
    assert redis_restart_event("a", "a", [], NOW) is None
    assert redis_restart_event(None, "a", [], NOW) is None
    restart = redis_restart_event("a", "b", ["orders/billing"], NOW)
    assert restart is not None
    assert restart["severity"] == "critical"
    # a topic-less event every viewer of the cluster reads: a count, never the groups' names
    assert "orders" not in str(restart)
    assert restart["data"]["missing_groups"] == 1


def _run(snap: ClusterSnapshot, run_id: str) -> ClusterSnapshot:
    snap.redis_run_id = run_id
    return snap


def test_incident_diff_first_pass_records_only() -> None:
    args: dict[str, Any] = {"now_ms": NOW, "previous_run_id": "r1", "last_success_ms": None,
                            "interval_ms": 10_000, "dlq_burst": 10}  # fmt: skip
    events, memory = incident_diff(None, _run(_snap(), "r1"), {}, **args)
    assert events == []
    later = _run(_snap("STALL", dlq=50, consumers=()), "r1")
    args["last_success_ms"] = NOW - 10_000
    events, _ = incident_diff(memory, later, {}, **{**args, "now_ms": NOW + 10_000})
    assert sorted(e["kind"] for e in events) == ["consumer", "dlq", "status"]
