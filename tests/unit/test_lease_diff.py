"""Lease ownership changes between two passes (pure: no Redis)."""

from __future__ import annotations

from typing import Any

from dashboard.collectors.incidents import lease_diff
from mqcore.models import ClusterSnapshot
from tests.snapshot_parts import snapshot_of

NOW = 1_767_225_600_000


def _snap(*leases: tuple[int, str | None, int], error: str | None = None) -> ClusterSnapshot:
    """One topic "t", group "g": (partition, owner, epoch) per lease, TTL 10 s."""
    rows = [
        {"group": "g", "partition": p, "owner": owner, "ttl_ms": 10_000 if owner else None,
         "epoch": epoch}
        for p, owner, epoch in leases
    ]  # fmt: skip
    return snapshot_of({"topics": [{"topic": "t", "error": error, "leases": rows}]})


def _events(changes: dict[str, list[dict[str, Any]]]) -> list[tuple[int, str, Any, Any, int]]:
    return [
        (e["partition"], e["event"], e["previous_owner"], e["owner"], e["epoch"])
        for e in changes.get("t", [])
    ]


def test_first_pass_records_every_lease_and_reports_nothing() -> None:
    changes, state = lease_diff(None, _snap((0, "a", 1), (1, None, 0)), NOW)
    assert changes == {}
    assert state == {"t\x1fg\x1f0": ["a", 1, NOW + 10_000], "t\x1fg\x1f1": [None, 0, NOW]}
    # the next pass: the lease without an owner then and now changes nothing
    changes, state = lease_diff(state, _snap((0, "a", 1), (1, None, 0)), NOW + 1000)
    assert changes == {}
    assert state == {"t\x1fg\x1f0": ["a", 1, NOW + 11_000]}


def test_steady_leases_report_nothing_and_keep_the_owned_ones() -> None:
    _, state = lease_diff({}, _snap((0, "a", 1), (1, None, 0), (2, "b", 3)), NOW)
    changes, state = lease_diff(state, _snap((0, "a", 1), (1, None, 0), (2, "b", 3)), NOW + 1)
    assert changes == {}
    assert list(state) == ["t\x1fg\x1f0", "t\x1fg\x1f2"]
    assert state["t\x1fg\x1f2"] == ["b", 3, NOW + 10_001]


def test_acquired_taken_over_and_new_epoch() -> None:
    _, state = lease_diff({}, _snap((0, "a", 1), (1, None, 0), (2, "b", 3)), NOW)
    changes, _ = lease_diff(state, _snap((0, "c", 2), (1, "d", 1), (2, "b", 4)), NOW + 1)
    assert _events(changes) == [
        (0, "taken_over", "a", "c", 2),
        (1, "acquired", None, "d", 1),
        (2, "acquired", "b", "b", 4),
    ]


def test_lost_owner_is_released_before_the_ttl_and_expired_after() -> None:
    """Leases of the previous pass that now have no owner (their epoch is the new one)
    or are gone (their epoch is the old one)."""
    _, state = lease_diff({}, _snap((0, "a", 1), (1, "b", 2), (2, "c", 3)), NOW)
    changes, after = lease_diff(state, _snap((0, None, 5), (2, "c", 3)), NOW + 1000)
    assert _events(changes) == [(0, "released", "a", None, 5), (1, "released", "b", None, 2)]
    assert list(after) == ["t\x1fg\x1f2"]
    changes, _ = lease_diff(state, _snap((0, None, 5), (2, "c", 3)), NOW + 10_000)
    assert _events(changes) == [(0, "expired", "a", None, 5), (1, "expired", "b", None, 2)]


def test_unreadable_topic_keeps_its_previous_leases() -> None:
    _, state = lease_diff({}, _snap((0, "a", 1)), NOW)
    changes, kept = lease_diff(state, _snap(error="ResponseError"), NOW + 1000)
    assert changes == {}
    assert kept == state
