"""The collector's log: DEBUG per pass, one INFO summary per minute (fake clock via now_ms)."""

from __future__ import annotations

import logging

import pytest

from dashboard.collectors.passes import PassLog
from tests.snapshot_parts import snapshot_of

SNAP = snapshot_of({"topics": [{"topic": "orders", "partitions": 8},
                               {"topic": "payments", "partitions": 4},
                               {"topic": "emails", "partitions": 4}]})  # fmt: skip


def test_each_pass_is_debug_and_the_summary_comes_once_a_minute(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="dashboard.collectors")
    passes = PassLog()
    for second in range(0, 125, 5):  # 25 passes over two minutes, one every 5 s
        passes.record("default", snapshot=SNAP, elapsed_ms=6.2, alerts_open=2, stored=True,
                      now_ms=1_000_000 + second * 1000)  # fmt: skip
    debug = [r for r in caplog.records if r.levelno == logging.DEBUG]
    info = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert len(debug) == 25
    assert info == ["collected 3 topics, 16 partitions, 6 ms, 2 alerts open"] * 2
    assert all(r.levelno <= logging.INFO for r in caplog.records)


def test_summary_adds_clusters_and_skips_a_minute_without_stored_passes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="dashboard.collectors")
    passes = PassLog()
    passes.record("a", snapshot=SNAP, elapsed_ms=5, alerts_open=1, stored=True, now_ms=0)
    passes.record("b", snapshot=SNAP, elapsed_ms=3, alerts_open=0, stored=True, now_ms=1_000)
    passes.record("a", snapshot=SNAP, elapsed_ms=5, alerts_open=1, stored=True, now_ms=60_000)
    passes.record("a", snapshot=None, elapsed_ms=0, alerts_open=None, stored=False,
                  now_ms=130_000)  # fmt: skip
    assert [r.getMessage() for r in caplog.records] == [
        "collected 6 topics, 32 partitions, 8 ms, 1 alerts open (2 clusters)"
    ]
