"""Series encoding, tier choice, decimation into coarser tiers and retention trim (pure)."""

from __future__ import annotations

from dashboard.collectors import series_points, tier_points
from dashboard.store import POINT, Tier, decode_points, encode_points, tier_for, trim_points

TIERS = (Tier("raw", 0, 86_400), Tier("1m", 60, 7 * 86_400), Tier("10m", 600, 90 * 86_400))
NOW = 1_800_000_000_000


def test_points_round_trip_in_12_bytes() -> None:
    pts = [(NOW, 1.0), (NOW + 10_000, 123456789012.0), (NOW + 20_000, 0.5)]
    data = encode_points(pts)
    assert len(data) == 3 * POINT.size == 36
    assert decode_points(data) == pts
    assert decode_points(data + b"\x01\x02") == pts  # a torn tail is ignored
    assert decode_points(None) == []


def test_finest_tier_that_covers_the_range() -> None:
    assert tier_for(NOW - 3_600_000, NOW, TIERS).name == "raw"
    assert tier_for(NOW - 2 * 86_400_000, NOW, TIERS).name == "1m"
    assert tier_for(NOW - 30 * 86_400_000, NOW, TIERS).name == "10m"
    assert tier_for(NOW - 365 * 86_400_000, NOW, TIERS).name == "10m"


def test_coarse_tiers_get_one_point_per_bucket() -> None:
    triples = [("lag", "t", 1.0)]
    buckets: dict[str, int] = {}
    counts = {"raw": 0, "1m": 0, "10m": 0}
    start = (NOW // 600_000) * 600_000
    for i in range(120):  # 20 minutes at 10 s
        points, buckets = tier_points(triples, buckets, start + i * 10_000, TIERS)
        for name in points:
            counts[name] += 1
    assert counts == {"raw": 120, "1m": 20, "10m": 2}


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
    got = {(m, e): v for m, e, v in series_points(snap)}
    assert got[("produced_total", "t")] == 20.0  # entries_read + lag
    assert got[("consumed_total", "t/g")] == 15.0
    assert got[("retry_count", "t")] == 3.0
    assert not any(e == "broken" for _, e in got)
    assert len(got) == 8 + 4
