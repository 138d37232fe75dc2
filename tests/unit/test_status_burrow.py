"""The partition rules against LinkedIn Burrow's evaluator test table (pure: no Redis).

The cases are the table ``tests`` of Burrow's ``core/internal/evaluator/caching_test.go``
(repository linkedin/Burrow; the rules are ``calculatePartitionStatus`` in
``core/internal/evaluator/caching.go``), restated as data in the stream model:

- a Burrow offset commit is a sample with ``position`` = the offset (entries-read),
  ``lag`` = its lag (None for a nil lag) and ``at_ms`` = its timestamp; a commit is a
  sign of life, so the sample is ``alive`` (a consumer committing the same offset is
  STALL, not STOP);
- Burrow's recent broker offsets (newest first) are the collector's later samples of
  the same partition: oldest first, spread evenly from the last commit up to
  ``timeNow`` (Burrow does not record their times), at the last committed offset with
  lag = broker offset - that offset, not alive; the newest one carries
  ``currentLag``;
- Burrow's STOP threshold is the span of the commits (last - first timestamp), so
  ``stop_after_ms`` is that span; ``timeNow`` (seconds) is ``now_ms`` / 1000; the
  window holds every sample of the case.

Every case of the table (0-15) is expressible this way; none is skipped. The table
checks each Burrow rule function too; only the final status is compared here,
since our rules are not split the same way.
"""

from __future__ import annotations

from typing import NamedTuple

import pytest

from dashboard.status import Sample, Status, Thresholds, partition_status


class Case(NamedTuple):
    why: str
    commits: list[tuple[int, int, int | None]]  # (offset, timestamp ms, lag)
    broker: list[int]  # Burrow's brokerOffsets, newest first
    now_s: int  # Burrow's timeNow
    allowed: int
    expected: Status


def _steady(lags: list[int | None], offsets: list[int]) -> list[tuple[int, int, int | None]]:
    """Commits one every 100 s from t=100 s."""
    return [
        (o, (i + 1) * 100_000, lag) for i, (o, lag) in enumerate(zip(offsets, lags, strict=True))
    ]


MOVING = [1000, 2000, 3000, 4000, 5000]
STILL = [1000] * 5
REWOUND = [1000, 2000, 3000, 2000, 4000]
T9 = 1512224618356  # case 9/10: 15 commits about a second apart, all caught up
DENSE = [
    (792748079 + i, T9 + d, 0)
    for i, d in enumerate(
        [0, 1006, 2010, 3011, 4014, 5017, 6022, 7023, 8027, 9027, 10027, 11032, 12035, 13038,
         14041]
    )
]  # fmt: skip

CASES = [
    Case("0: lag zero at the start, still committing", _steady([0, 50, 100, 150, 200], MOVING),
         [5200], 600, 0, Status.OK),
    Case("1: 400 s since the last commit is not more than the 400 s span",
         _steady([0, 50, 100, 150, 200], MOVING), [5200], 900, 0, Status.OK),
    Case("2: stopped although lag was zero in the window (Burrow #290)",
         _steady([0, 50, 100, 150, 200], MOVING), [5200], 1000, 0, Status.STOP),
    Case("3: stopped, lag never zero", _steady([50, 100, 150, 200, 250], MOVING),
         [5250], 1000, 0, Status.STOP),
    Case("4: not moving, but lag zero in the window", _steady([0, 50, 100, 150, 200], STILL),
         [1200], 600, 0, Status.OK),
    Case("5: not moving, lag never zero", _steady([100, 150, 200, 250, 300], STILL),
         [1300], 600, 0, Status.STALL),
    Case("6: not moving, lag flat", _steady([100] * 5, STILL), [1100], 600, 0, Status.STALL),
    Case("7: rewound and came back past the old offset",
         _steady([100, 150, 200, 1250, 300], REWOUND), [4300], 600, 0, Status.OK),
    Case("8: current lag zero although the commits would be stopped",
         _steady([50, 100, 150, 200, 250], MOVING), [5000], 1000, 0, Status.OK),
    Case("9: caught up, then new entries and nothing moves (Burrow #290)", DENSE,
         [792749024, 792749000, 792748800, 792748600, 792748500], 1512224650, 0, Status.STOP),
    Case("10: lag was zero in the recent broker samples (Burrow #303)", DENSE,
         [792748094, 792748093, 792748093, 792748093], 1512224650, 0, Status.OK),
    Case("11: case 0 with unknown lags in between",
         [(500 * (i + 2), 50_000 * (i + 2), None if i % 2 else 25 * i) for i in range(10)],
         [5700], 600, 0, Status.OK),
    Case("12: current lag within the allowed lag",
         [(1000, 100_000, 2), (2000, 200_000, 1), (2000, 300_000, 1)], [2001], 550, 1, Status.OK),
    Case("13: case 5 with an allowed lag", _steady([100, 150, 200, 250, 300], STILL),
         [1300], 600, 99, Status.STALL),
    Case("14: case 7 with an allowed lag", _steady([100, 150, 200, 1250, 300], REWOUND),
         [4300], 600, 99, Status.OK),
    Case("15: rewound and not back to the old offset",
         _steady([100, 150, 200, 1250, 300], [1000, 2000, 3000, 2000, 2500]),
         [4300], 600, 0, Status.REWIND),
]  # fmt: skip


def _samples(case: Case) -> list[Sample]:
    commits = [Sample(at, lag, offset, 0, alive=True) for offset, at, lag in case.commits]
    last_offset, last_at = case.commits[-1][0], case.commits[-1][1]
    now_ms = case.now_s * 1000
    n = len(case.broker)
    refreshes = [
        Sample(last_at + (now_ms - last_at) * (i + 1) // n, broker - last_offset, last_offset, 0)
        for i, broker in enumerate(reversed(case.broker))
    ]
    return [*commits, *refreshes]


def test_case_11_is_case_0_with_nil_lags() -> None:
    """The restated case 11 keeps Burrow's offsets and lags (a commit every 50 s)."""
    commits = CASES[11].commits
    assert [c[0] for c in commits] == list(range(1000, 5501, 500))
    assert [c[2] for c in commits[::2]] == [0, 50, 100, 150, 200]
    assert all(c[2] is None for c in commits[1::2])


@pytest.mark.parametrize("case", CASES, ids=[c.why.split(":")[0] for c in CASES])
def test_burrow_case(case: Case) -> None:
    samples = _samples(case)
    span = case.commits[-1][1] - case.commits[0][1]
    th = Thresholds(window_samples=len(samples), allowed_lag=case.allowed, stop_after_ms=span)
    status, why = partition_status(samples, th, last_active_ms=0, now_ms=case.now_s * 1000)
    assert status is case.expected, f"{case.why}: {why}"
