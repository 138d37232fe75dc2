"""Status severity has one home: the declaration order of ``dashboard.status.Status``.

The overview's status sort and counts, the worst-of roll-ups (group from its
partitions, topic from its groups), the alerting statuses and the status badge
all derive from it; nothing in the console keeps its own ranking.
"""

from __future__ import annotations

from itertools import product
from typing import Any

import pytest

from dashboard import alerts
from dashboard.metrics_export import metrics_text
from dashboard.selectors.pages import overview, snapshot
from dashboard.status import (
    WORST_FIRST,
    Status,
    Thresholds,
    snapshot_enrich,
    status_parse,
    worst,
)
from dashboard.store import ConsoleStore
from dashboard.store.console import SnapshotRead
from dashboard.templatetags import console
from tests import snapshot_parts as parts
from tests.snapshot_parts import builtins, snapshot_of

NOW = 1_000_000
TH = Thresholds(window_samples=3, allowed_lag=0, stop_after_ms=60_000)


def _enrich(snap: Any, state: Any, **rules: Any) -> tuple[Any, dict[str, Any]]:
    """:func:`snapshot_enrich` of JSON-shaped ``snap``: the stored snapshot's data, the state."""
    out, new_state = snapshot_enrich(snapshot_of(snap), state, **rules)
    return builtins(out), new_state


def test_severity_is_the_declaration_order() -> None:
    assert [s.severity for s in Status] == list(range(len(Status)))
    assert tuple(reversed(Status)) == WORST_FIRST
    assert WORST_FIRST[0] is Status.ERR
    assert WORST_FIRST[-1] is Status.OK


def test_worst_of_is_the_highest_severity() -> None:
    for a, b in product(Status, repeat=2):
        assert worst([a, b]) is max(a, b, key=lambda s: s.severity)
    assert worst(list(Status)) is WORST_FIRST[0]
    assert worst([]) is Status.OK


def test_status_parse_falls_back_to_unknown() -> None:
    assert status_parse("stall") is Status.STALL
    assert status_parse(None) is Status.UNKNOWN
    assert status_parse("nope") is Status.UNKNOWN
    assert 'class="status status-UNKNOWN"' in console.status_badge("nope")


def test_alerting_statuses_are_warn_and_worse() -> None:
    """WARN and worse alert; REWIND through its own rule, never the generic status rule."""
    expected = {s.value for s in Status if s.severity >= Status.WARN.severity}
    assert (
        alerts.BAD_STATUSES | {"REWIND"} == expected == {"WARN", "REWIND", "STALL", "STOP", "ERR"}
    )
    assert "REWIND" not in alerts.BAD_STATUSES
    assert "rewind" in alerts.RULES


def _part(pid: int, lag: int | None) -> dict[str, Any]:
    return {
        "partition": pid, "last_delivered_id": "1-0", "lag": lag, "lag_ms": None,
        "pending": 0, "entries_read": None, "oldest_pending_ms": None, "lag_reason": "",
    }  # fmt: skip


def test_enrich_rolls_up_the_worst_status() -> None:
    """UNKNOWN (lag unknown) outranks OK in the group, and the group in the topic."""
    snap = {
        "taken_at_ms": NOW,
        "topics": [
            {
                "topic": "t", "partitions": 2, "length": 1, "dlq_length": 0, "error": None,
                "groups": [
                    {"group": "ok", "lag": 0, "pending": 0,
                     "partitions": [_part(0, 0), _part(1, 0)]},
                    {"group": "mixed", "lag": None, "pending": 0,
                     "partitions": [_part(0, 0), _part(1, None)]},
                ],
                "leases": [], "consumers": [],
            }
        ],
    }  # fmt: skip
    out, _ = _enrich(snap, {}, cluster="c", defaults=TH, per_topic={}, dlq_window_ms=1)
    topic = out["topics"][0]
    statuses = [[p["status"] for p in g["partitions"]] for g in topic["groups"]]
    assert statuses == [["OK", "OK"], ["OK", "UNKNOWN"]]
    assert [g["status"] for g in topic["groups"]] == ["OK", "UNKNOWN"]
    assert topic["status"] == "UNKNOWN"


@pytest.fixture
def one_topic_per_status(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stored snapshot with one topic in each status, listed in no particular order."""
    order = [
        Status.WARN, Status.OK, Status.ERR, Status.REWIND, Status.UNKNOWN, Status.STOP, Status.STALL
    ]  # fmt: skip
    snap = parts.snapshot(
        [parts.topic(f"t-{s.value.lower()}", status=s.value, lag=1) for s in order], NOW
    )
    monkeypatch.setattr(snapshot, "cluster_config", lambda cluster: None)
    monkeypatch.setattr(
        ConsoleStore, "snapshot_read", lambda self, cluster: SnapshotRead(snap, None)
    )
    monkeypatch.setattr(ConsoleStore, "collector_health_get", lambda self: {})
    monkeypatch.setattr(overview, "topic_visible", lambda user, cluster, topic: True)


@pytest.mark.usefixtures("one_topic_per_status")
def test_overview_status_sort_and_counts_follow_the_enum() -> None:
    page = overview.overview_get("c", user=None, sparklines=False)
    worst_first = [s.value for s in WORST_FIRST]
    assert [row["status"] for row in page.rows.items] == worst_first
    assert list(page.counts) == worst_first
    assert set(page.counts.values()) == {1}
    ascending = overview.overview_get("c", user=None, order="asc", sparklines=False)
    assert [row["status"] for row in ascending.rows.items] == worst_first[::-1]


def test_rewind_is_a_metric_state_an_alert_and_a_badge() -> None:
    typed = parts.snapshot([parts.topic("t", [parts.group(
        "g", [parts.part(0, 4, status="REWIND")], status="REWIND",
        status_reason="position went back",
    )], status="REWIND")], NOW)  # fmt: skip
    text = metrics_text({"c": typed}, {}).decode()
    assert 'group_status{cluster="c",group="g",status="REWIND",topic="t"} 1.0' in text
    assert 'topic_status{cluster="c",status="STALL",topic="t"} 0.0' in text
    (cond,) = alerts.alert_conditions(typed, {}, alerts.AlertThresholds())  # one, not two
    assert (cond.rule, cond.entity, cond.severity) == ("rewind", "t/g", "warning")
    assert "t/g went back: partition 0: position went back" in cond.message
    assert 'class="status status-REWIND"' in console.status_badge("REWIND")
