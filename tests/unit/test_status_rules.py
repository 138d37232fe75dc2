"""Burrow-like status rules, table-driven (pure: no Redis)."""

from __future__ import annotations

from typing import Any

import pytest

from dashboard.status import (
    Sample,
    Status,
    Thresholds,
    dlq_history_step,
    partition_status,
    snapshot_enrich,
    thresholds_for,
    worst,
)
from tests.snapshot_parts import builtins, snapshot_of

TH = Thresholds(window_samples=4, allowed_lag=0, stop_after_ms=30_000)
NOW = 1_000_000


def _enrich(snap: Any, state: Any, **rules: Any) -> tuple[Any, dict[str, Any]]:
    """:func:`snapshot_enrich` of JSON-shaped ``snap``: the stored snapshot's data, the state."""
    out, new_state = snapshot_enrich(snapshot_of(snap), state, **rules)
    return builtins(out), new_state


def window(*rows: tuple[int | None, str], step_ms: int = 10_000) -> list[Sample]:
    """(lag, position) oldest first, one sample every ``step_ms`` ending at NOW."""
    n = len(rows)
    return [
        Sample(at_ms=NOW - (n - 1 - i) * step_ms, lag=lag, position=pos, pending=0)
        for i, (lag, pos) in enumerate(rows)
    ]


CASES = [
    # id, samples, last_active_ms, expected status, words in the reason
    ("caught-up", window((0, "10"), (0, "10")), NOW, Status.OK, "within allowed"),
    (
        "zero-lag-once-in-window",
        window((5, "1"), (0, "6"), (3, "6"), (4, "6")),
        NOW,
        Status.OK,
        "was 0",
    ),
    (
        "moving-lag-shrinking",
        window((9, "1"), (7, "5"), (5, "9"), (2, "14")),
        NOW,
        Status.OK,
        "moving",
    ),
    ("moving-lag-flat", window((5, "1"), (5, "6"), (5, "11"), (5, "16")), NOW, Status.OK, "moving"),
    (
        "moving-lag-growing",
        window((2, "1"), (4, "3"), (6, "5"), (9, "7")),
        NOW,
        Status.WARN,
        "grew",
    ),
    ("growing-not-full-window", window((2, "1"), (4, "3"), (6, "5")), NOW, Status.OK, "moving"),
    (
        "stuck-recent-activity",
        window((3, "4"), (4, "4"), (5, "4"), (6, "4")),
        NOW - 5_000,
        Status.STALL,
        "not moving",
    ),
    (
        "stuck-window-not-full",
        window((3, "4"), (4, "4"), (5, "4")),
        NOW - 5_000,
        Status.WARN,
        "not full yet",
    ),
    (
        "stuck-no-activity",
        window((3, "4"), (4, "4"), (5, "4")),
        NOW - 40_000,
        Status.STOP,
        "no consumer activity",
    ),
    ("lag-null", window((0, "1"), (None, "1")), NOW, Status.UNKNOWN, "lag unknown"),
    ("one-sample", window((5, "1")), NOW, Status.OK, "one sample"),
    ("no-samples", [], NOW, Status.UNKNOWN, "no samples"),
]


@pytest.mark.parametrize(
    ("samples", "last_active", "expected", "reason"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_partition_status(
    samples: list[Sample], last_active: int, expected: Status, reason: str
) -> None:
    status, why = partition_status(samples, TH, last_active_ms=last_active, now_ms=NOW)
    assert status is expected
    assert reason in why


def test_error_wins_over_everything() -> None:
    samples = [*window((0, "1")), Sample(NOW, None, "1", 0, error="timeout")]
    status, why = partition_status(samples, TH, last_active_ms=NOW, now_ms=NOW)
    assert status is Status.ERR
    assert "timeout" in why


def test_allowed_lag_per_topic() -> None:
    th = thresholds_for(
        "orders", defaults=TH, per_topic={"orders": {"allowed_lag": 10, "stop_after_s": 5}}
    )
    assert th == Thresholds(window_samples=4, allowed_lag=10, stop_after_ms=5000)
    assert thresholds_for("other", defaults=TH, per_topic={"orders": {}}) is TH
    status, _ = partition_status(
        window((8, "4"), (9, "4"), (9, "4")), th, last_active_ms=0, now_ms=NOW
    )
    assert status is Status.OK


def test_worst_order() -> None:
    assert worst([Status.OK, Status.WARN, Status.UNKNOWN]) is Status.WARN
    assert worst([Status.STALL, Status.STOP]) is Status.STOP
    assert worst([Status.STOP, Status.ERR]) is Status.ERR
    assert worst([]) is Status.OK


def _snap(now: int, *, ldi: str, lag: int, owner: str | None) -> dict:
    part = {
        "partition": 0, "last_delivered_id": ldi, "lag": lag, "lag_ms": lag * 10,
        "pending": 0, "entries_read": None, "oldest_pending_ms": None, "lag_reason": "",
    }  # fmt: skip
    return {
        "taken_at_ms": now,
        "topics": [
            {
                "topic": "t", "partitions": 1, "length": 10, "dlq_length": 2, "error": None,
                "groups": [{"group": "g", "lag": lag, "lag_ms": lag * 10, "pending": 0,
                            "partitions": [part]}],
                "leases": [{"group": "g", "partition": 0, "owner": owner, "ttl_ms": 1000,
                            "epoch": 1}],
                "consumers": [],
            }
        ],
    }  # fmt: skip


def test_enrich_goes_stall_then_stop_then_ok() -> None:
    """A consumer that leaves: STALL while the window fills, STOP after stop_after, OK on drain."""
    th = Thresholds(window_samples=3, allowed_lag=0, stop_after_ms=3500)
    state: dict = {}
    seen = []
    plan = [(0, "1-0", 0, "c1"), (1000, "1-0", 3, None), (2000, "1-0", 4, None),
            (3000, "1-0", 5, None), (4000, "1-0", 6, None), (5000, "9-0", 0, "c1")]  # fmt: skip
    for t, ldi, lag, owner in plan:
        snap, state = _enrich(
            _snap(NOW + t, ldi=ldi, lag=lag, owner=owner), state, cluster="c",
            defaults=th, per_topic={}, dlq_window_ms=60_000,
        )  # fmt: skip
        seen.append(snap["topics"][0]["status"])
    assert seen == ["OK", "OK", "OK", "STALL", "STOP", "OK"]
    topic = snap["topics"][0]
    assert snap["cluster"] == "c"
    assert topic["groups"][0]["partitions"][0]["status_reason"]
    assert topic["lag"] == 0
    assert topic["pending"] == 0


def test_enrich_marks_unreadable_topic_err() -> None:
    snap = _snap(NOW, ldi="1-0", lag=1, owner="c")
    snap["topics"][0]["error"] = "ResponseError: WRONGTYPE"
    out, _ = _enrich(snap, {}, cluster="c", defaults=TH, per_topic={}, dlq_window_ms=60_000)
    assert out["topics"][0]["status"] == "ERR"
    assert out["topics"][0]["groups"][0]["partitions"][0]["status"] == "ERR"


def test_dlq_growth_vs_window_ago() -> None:
    hist: list = []
    growth = None
    for t, length in [(0, 1), (30_000, 2), (60_000, 4), (90_000, 7)]:
        hist, growth = dlq_history_step(hist, NOW + t, length, 60_000)
    assert growth == 7 - 2  # vs the newest point at least 60 s old
    _, first = dlq_history_step([], NOW, 3, 60_000)
    assert first is None


def test_dlq_history_keeps_int_points_and_converts_others() -> None:
    kept = [NOW - 90_000, 1]
    hist, growth = dlq_history_step(
        [kept, (NOW - 50_000, 2.0), [float(NOW - 20_000), True]], NOW, 5, 60_000
    )
    assert hist == [[NOW - 90_000, 1], [NOW - 50_000, 2], [NOW - 20_000, 1], [NOW, 5]]
    assert hist[0] is kept  # state is read-only: an int point is shared, not copied
    assert growth == 5 - 1


def test_stop_is_checked_before_the_zero_lag_rule() -> None:
    """Caught up, then lag appears and nothing moves for longer than stop_after: STOP."""
    samples = window((0, "7"), (0, "7"), (2, "7"), (3, "7"), step_ms=16_000)  # 32 s ago
    status, why = partition_status(samples, TH, last_active_ms=0, now_ms=NOW)
    assert status is Status.STOP
    assert "no consumer activity" in why
    recent = window((0, "7"), (2, "7"), (3, "7"), step_ms=12_000)  # caught up 24 s ago
    assert partition_status(recent, TH, last_active_ms=0, now_ms=NOW)[0] is Status.OK


def test_warn_skips_unknown_lags() -> None:
    samples = window((2, "1"), (None, "3"), (6, "5"), (9, "7"))
    status, why = partition_status(samples, TH, last_active_ms=NOW, now_ms=NOW)
    assert status is Status.WARN
    assert "2 -> 9" in why


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        (((5, "10"), (6, "12"), (40, "3"), (38, "5")), Status.REWIND),  # entries-read back
        (((5, "10"), (6, "12"), (40, "3"), (8, "12")), Status.OK),  # came back: moving
        (((5, "9-0"), (6, "9-5"), (40, "2-0"), (38, "4-0")), Status.REWIND),  # id back
    ],
)
def test_rewind(rows: tuple[tuple[int, str], ...], expected: Status) -> None:
    status, _ = partition_status(window(*rows), TH, last_active_ms=NOW, now_ms=NOW)
    assert status is expected


def test_enrich_rewind_on_setid_and_window_completeness() -> None:
    """XGROUP SETID to an older id: REWIND even while entries-read is the position."""
    th = Thresholds(window_samples=3, allowed_lag=0, stop_after_ms=60_000)
    state: dict = {}
    seen = []
    for t, ldi, read, lag in [(0, "5-0", 5, 3), (1000, "6-0", 6, 2), (2000, "2-0", 6, 6)]:
        snap = _snap(NOW + t, ldi=ldi, lag=lag, owner="c1")
        snap["topics"][0]["groups"][0]["partitions"][0]["entries_read"] = read
        snap, state = _enrich(
            snap, state, cluster="c", defaults=th, per_topic={}, dlq_window_ms=60_000
        )
        group = snap["topics"][0]["groups"][0]
        seen.append((group["status"], group["complete"]))
    assert seen == [("OK", 0.0), ("OK", 0.0), ("REWIND", 1.0)]
    assert "6-0 to 2-0" in group["status_reason"]


@pytest.mark.parametrize(
    ("positions", "expected"),
    [
        (("5-9", "5-10", "5-11", "6-0"), Status.OK),  # ids of growing digit counts: moving
        (("9-1111", "10-111", "10-112", "10-113"), Status.OK),  # text order is not id order
        (("10-111", "10-112", "9-1111", "9-1112"), Status.REWIND),  # in text order, back in ids
        (("7", "9", "12", "13"), Status.OK),  # entries-read, growing digit counts
        (("12", "13", "7", "9"), Status.REWIND),
        (("3", "3-5", "4", "3-9"), Status.OK),  # each kind on its own moves forward
        (("4", "3-9", "3-5", "3"), Status.REWIND),
    ],
)
def test_rewind_compares_positions_in_order_of_their_kind(
    positions: tuple[str, ...], expected: Status
) -> None:
    rows = [(5, p) for p in positions]
    status, _ = partition_status(window(*rows), TH, last_active_ms=NOW, now_ms=NOW)
    assert status is expected
    samples = [
        Sample(at_ms=NOW, lag=9, position=int(p) if p.isdigit() else p, pending=0)
        for p in positions
    ]
    status, _ = partition_status(samples, TH, last_active_ms=NOW, now_ms=NOW)
    assert status is expected


def test_enrich_window_slides_and_an_unchanged_one_is_shared() -> None:
    """The window keeps the last ``window_samples`` samples; a full window that the new
    sample leaves as it was is the previous state's list (state is read-only)."""
    th = Thresholds(window_samples=3, allowed_lag=0, stop_after_ms=60_000)
    state: dict = {}
    entries = []
    for t, ldi, lag in [(0, "1-0", 2), (1000, "2-0", 3), (2000, "2-0", 3), (3000, "2-0", 3),
                        (4000, "2-0", 3), (5000, "3-0", 3)]:  # fmt: skip
        snap, state = _enrich(
            _snap(NOW + t, ldi=ldi, lag=lag, owner="c1"), state, cluster="c",
            defaults=th, per_topic={}, dlq_window_ms=60_000,
        )  # fmt: skip
        entries.append(state["windows"]["t"]["g"][0])
    assert [e[2:] for e in entries[:4]] == [
        [[2], ["1-0"], ["1-0"]],
        [[2, 3], ["1-0", "2-0"], ["1-0", "2-0"]],
        [[2, 3, 3], ["1-0", "2-0", "2-0"], ["1-0", "2-0", "2-0"]],
        [[3, 3, 3], ["2-0", "2-0", "2-0"], ["2-0", "2-0", "2-0"]],
    ]
    assert entries[4][2] is entries[3][2]
    assert entries[4][3] is entries[3][3]
    assert entries[5][2] is entries[4][2]  # the lag did not change, the position did
    assert entries[5][3] == ["2-0", "2-0", "3-0"]
    assert snap["topics"][0]["groups"][0]["complete"] == 1.0
    # a smaller window for the topic: the state shrinks to it
    snap, state = _enrich(
        _snap(NOW + 6000, ldi="3-0", lag=3, owner="c1"), state, cluster="c", defaults=th,
        per_topic={"t": {"window_samples": 2}}, dlq_window_ms=60_000,
    )  # fmt: skip
    assert state["windows"]["t"]["g"][0][2:] == [[3, 3], ["3-0", "3-0"], ["3-0", "3-0"]]


def test_enrich_completeness_is_the_share_of_full_windows() -> None:
    th = Thresholds(window_samples=2, allowed_lag=0, stop_after_ms=60_000)
    snap = _snap(NOW, ldi="1-0", lag=1, owner="c1")
    group = snap["topics"][0]["groups"][0]
    group["partitions"] += [{**group["partitions"][0], "partition": p} for p in (1, 2)]
    state = {"windows": {"t": {"g": [[NOW, 0, [1], ["1-0"], ["1-0"]]]}}}
    out, _ = _enrich(snap, state, cluster="c", defaults=th, per_topic={}, dlq_window_ms=1)
    assert out["topics"][0]["groups"][0]["complete"] == 0.3333
