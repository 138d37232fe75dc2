"""Series encoding, tier choice, decimation into coarser tiers and retention trim (pure)."""

from __future__ import annotations

from dashboard.collectors.derive import series_points
from dashboard.store import (
    COUNTER,
    GAUGE,
    POINT,
    Tier,
    decode_points,
    encode_points,
    point_struct,
    rollup_value,
    series_bytes,
    tier_for,
    trim_points,
)
from dashboard.store.points import pack_point, pack_points
from dashboard.store.series import tier_points
from tests.snapshot_parts import snapshot_of

TIERS = (Tier("raw", 0, 86_400), Tier("1m", 60, 7 * 86_400), Tier("10m", 600, 90 * 86_400))
NOW = 1_800_000_000_000


def test_gauges_in_8_bytes_counters_exact_in_12() -> None:
    pts = [(NOW, 1.0), (NOW + 10_000, 1234567.0), (NOW + 20_000, 0.5)]
    data = encode_points(pts)
    assert POINT is GAUGE
    assert len(data) == 3 * GAUGE.size == 24
    assert decode_points(data) == pts
    assert decode_points(data + b"\x01\x02") == pts  # a torn tail is ignored
    assert decode_points(None) == []
    big = [(NOW, 123456789012.0), (NOW + 10_000, 2.0**53)]
    assert point_struct("produced_total") is COUNTER
    assert point_struct("lag") is GAUGE
    data = encode_points(big, COUNTER)
    assert len(data) == 2 * COUNTER.size == 24
    assert decode_points(data, COUNTER) == big  # counters stay exact
    # a gauge keeps ~7 significant digits
    [(_, approx)] = decode_points(encode_points([(NOW, 123456789012.0)]))
    assert abs(approx - 123456789012.0) / 123456789012.0 < 1e-7


def test_points_of_one_stamp_pack_in_one_call_as_one_by_one() -> None:
    stamp = NOW // 1000
    for point, values in (
        (GAUGE, [1.0, 2, 0.5]),
        (GAUGE, [1.0, 1e39, -1e39]),  # beyond float32: clamped, as pack_point does
        (COUNTER, [123456789012.0, 2.0**53, 0]),
    ):
        one_by_one = b"".join(pack_point(point, stamp, float(v)) for v in values)
        assert pack_points(point, stamp, values) == one_by_one
    assert pack_points(GAUGE, stamp, []) == b""


def test_bytes_per_series_per_tier() -> None:
    assert series_bytes(TIERS, 10, "lag") == {"raw": 8640 * 8, "1m": 10080 * 8, "10m": 12960 * 8}
    assert series_bytes(TIERS, 10, "consumed_total")["raw"] == 8640 * 12


def test_rollup_keeps_gauge_peaks_and_counter_last() -> None:
    assert rollup_value("lag", [3.0, 9.0, 4.0]) == 9.0
    assert rollup_value("oldest_pending_ms", [1.0]) == 1.0
    assert rollup_value("produced_total", [10.0, 12.0, 15.0]) == 15.0


def test_finest_tier_that_covers_the_range() -> None:
    assert tier_for(NOW - 3_600_000, NOW, TIERS).name == "raw"
    assert tier_for(NOW - 2 * 86_400_000, NOW, TIERS).name == "1m"
    assert tier_for(NOW - 30 * 86_400_000, NOW, TIERS).name == "10m"
    assert tier_for(NOW - 365 * 86_400_000, NOW, TIERS).name == "10m"


def test_coarse_tiers_get_one_point_per_closed_bucket() -> None:
    triples = [("lag", "t", 1.0)]
    buckets: dict[str, int] = {}
    counts = {"raw": 0, "1m": 0, "10m": 0}
    closed_seen: dict[str, list[int]] = {"1m": [], "10m": []}
    start = (NOW // 600_000) * 600_000
    for i in range(121):  # 20 minutes at 10 s, and the first pass of minute 21
        points, buckets, closed = tier_points(triples, buckets, start + i * 10_000, TIERS)
        assert set(points) == {"raw"}  # coarse tiers are rolled up from raw, never sampled
        counts["raw"] += len(points["raw"])
        for name, bucket in closed.items():
            counts[name] += 1
            closed_seen[name].append(bucket)
    assert counts == {"raw": 121, "1m": 20, "10m": 2}
    assert closed_seen["1m"] == [start // 60_000 + m for m in range(20)]
    assert closed_seen["10m"] == [start // 600_000, start // 600_000 + 1]
    _, _, first = tier_points(triples, {}, start, TIERS)
    assert first == {}  # the first pass ever closes nothing


def test_trim_keeps_retention_and_cap() -> None:
    pts = [(NOW - i * 1000, float(i)) for i in range(100)][::-1]
    kept = trim_points(pts, NOW, retention_s=30, max_points=1000)
    assert [t for t, _ in kept] == [NOW - i * 1000 for i in range(30, -1, -1)]
    assert len(trim_points(pts, NOW, retention_s=1000, max_points=10)) == 10


def test_series_points_per_topic_and_group() -> None:
    snap = {
        "topics": [
            {
                "topic": "t", "lag": 5, "lag_ms": 50, "pending": 1, "oldest_pending_ms": 7,
                "dlq_length": 2, "length": 20, "retry": {"count": 3},
                "groups": [{"group": "g", "lag": 5, "lag_ms": 50, "pending": 1,
                            "partitions": [{"entries_read": 10}, {"entries_read": 5}]}],
            },
            {"topic": "broken", "error": "x"},
        ]
    }  # fmt: skip
    got = {(m, e): v for m, e, v in series_points(snapshot_of(snap))}
    assert got[("produced_total", "t")] == 20.0  # entries_read + lag
    assert got[("consumed_total", "t/g")] == 15.0
    assert got[("retry_count", "t")] == 3.0
    assert not any(e == "broken" for _, e in got)
    assert len(got) == 8 + 4


def test_produced_total_is_the_most_a_group_saw_else_the_length() -> None:
    def topic(*groups: dict) -> dict:
        return {"topic": "t", "length": 20, "groups": list(groups)}

    full = {"group": "a", "lag": 3, "partitions": [{"entries_read": 10}, {"entries_read": 9}]}
    behind = {"group": "b", "lag": 0, "partitions": [{"entries_read": 4}]}
    unknown = {"group": "c", "lag": 9, "partitions": [{"entries_read": 50}, {}]}
    no_lag = {"group": "d", "lag": None, "partitions": [{"entries_read": 60}]}

    def points(*groups: dict) -> dict:
        return {(m, e): v for m, e, v in series_points(snapshot_of({"topics": [topic(*groups)]}))}

    got = points(behind, full, unknown, no_lag)
    assert got[("produced_total", "t")] == 22.0  # 10 + 9 + 3
    assert got[("consumed_total", "t/a")] == 19.0
    assert got[("consumed_total", "t/d")] == 60.0
    assert ("consumed_total", "t/c") not in got
    assert ("lag", "t/d") not in got
    assert points(unknown, no_lag)[("produced_total", "t")] == 20.0  # the length
    # the topic's points, then its groups'; the unknown (None) ones left out (a struct's
    # counts, pending and lengths, are always known)
    assert [m for m, e, _ in series_points(snapshot_of({"topics": [topic(full)]}))] == [
        "pending", "dlq_length", "length", "retry_count", "produced_total",
        "lag", "lag_ms", "pending", "consumed_total",
    ]  # fmt: skip
