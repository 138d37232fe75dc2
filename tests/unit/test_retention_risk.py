"""The retention_risk mark from snapshot dicts alone (no Redis): the floor is each group's
oldest pending entry, a backlog the snapshot cannot tell is a "may", nothing is read on
clusters without rules that skip groups."""

from __future__ import annotations

from typing import Any

import pytest

from dashboard.collectors.retention_risk import retention_risks
from mqcore.retention import JavaRetention, RetentionPolicy
from tests.snapshot_parts import builtins, snapshot_of

JAVA = JavaRetention(maxlen=1_000, retention_ms=None, frontier_trim=False)


def snap(pending_id: str | None, *, lag: int = 0, pending: int = 1, length: int = 1_000) -> Any:
    row = {
        "partition": 0, "last_delivered_id": "5000-0", "lag": lag, "lag_ms": 0,
        "pending": pending if pending_id else 0, "lag_exact": True, "length": length,
        "oldest_pending_id": pending_id,
    }  # fmt: skip
    group = {"group": "g", "partitions": [row], "retention_risk": {"stale": True}}
    return {"taken_at_ms": 10_000, "topics": [{"topic": "t", "groups": [group], "leases": []}]}


def retention_risk_mark(s: Any, *args: Any, **kwargs: Any) -> None:
    """The risks set on the snapshot's groups as the pass's derive stage sets them."""
    for topic in s["topics"]:
        for group in topic["groups"]:
            group.pop("retention_risk", None)
    risks = retention_risks(snapshot_of(s), *args, **kwargs)
    for topic in s["topics"]:
        for group in topic["groups"]:
            risk = risks.get((topic["topic"], group["group"]))
            if risk is not None:
                group["retention_risk"] = builtins(risk)


def no_counter(topic: str, partition: int) -> Any:
    raise AssertionError("nothing to count")


def test_no_rule_that_skips_groups_reads_nothing_and_clears_marks() -> None:
    s = snap("4000-0", length=10**6)
    retention_risk_mark(s, RetentionPolicy.build(maxlen=10), None, no_counter)
    assert "retention_risk" not in s["topics"][0]["groups"][0]


@pytest.mark.parametrize(
    ("lag", "pending_id", "length", "risk"),
    [
        (950, None, 1_000, 0),  # no pending: the lag is the backlog, past 900 of 1,000
        (800, None, 1_000, None),  # 200 writes left: not yet
        (0, "4000-0", 800, None),  # the partition is shorter than the bound's last tenth
        (1_001, "4000-0", 1_200, 2),  # lag + pending over the bound: lost now
    ],
)
def test_decided_from_the_snapshot(
    lag: int, pending_id: str | None, length: int, risk: int | None
) -> None:
    s = snap(pending_id, lag=lag, length=length)
    retention_risk_mark(s, RetentionPolicy(), JAVA, no_counter)
    mark = s["topics"][0]["groups"][0].get("retention_risk")
    assert (None if mark is None else mark["lost_at_least"]) == risk


def test_an_undecided_backlog_without_counting_is_a_may() -> None:
    s = snap("4000-0", length=1_000)  # one pending entry somewhere below: 1..1,000 entries
    retention_risk_mark(s, RetentionPolicy(), JAVA, None)
    mark = s["topics"][0]["groups"][0]["retention_risk"]
    assert (mark["lost_at_least"], mark["may"]) == (0, True)
    s = snap("4000-0", length=1_000)
    retention_risk_mark(s, RetentionPolicy(), JAVA, no_counter, probe_entries=0)
    assert s["topics"][0]["groups"][0]["retention_risk"]["may"]
