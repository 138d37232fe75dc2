"""Series points: how a sample is packed, the tiers it is kept in, roll-ups and retention.

A series is one Redis string of packed points, APPENDed each pass: gauges take
8 bytes (``<If``: uint32 epoch seconds, float32 value), ``*_total`` counters 12
(``<Id``: float64, exact to 2^53). Tiers: ``raw`` (every pass), ``1m`` and
``10m``: when a bucket closes, the raw points of that bucket become one point of
the tier stamped with the bucket start - the MAX for gauges (peaks matter), the
LAST value for counters. A series longer than its retention by 10% is rewritten
with only the points inside the retention (see :func:`tier_limits`), so the
bytes per series are bounded by retention / cadence x point size
(:func:`series_bytes`).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from django.conf import settings

__all__ = [
    "COUNTER",
    "GAUGE",
    "POINT",
    "TIERS",
    "Tier",
    "decode_points",
    "encode_points",
    "pack_point",
    "pack_points",
    "point_struct",
    "rollup_value",
    "series_bytes",
    "tier_for",
    "tier_limits",
    "tier_points",
    "tiers",
    "trim_points",
]

GAUGE = struct.Struct("<If")  # uint32 epoch seconds, float32 value
COUNTER = struct.Struct("<Id")  # uint32 epoch seconds, float64 value: exact counts
POINT = GAUGE  # the common case; counters use COUNTER (see point_struct)
_F32_MAX = 3.4028234663852886e38

TIERS = ("raw", "1m", "10m")


@dataclass(frozen=True, slots=True)
class Tier:
    name: str
    bucket_s: int  # 0: every pass
    retention_s: int


def tiers() -> tuple[Tier, ...]:
    """The tiers with the retentions of the current settings, finest first."""
    return (
        Tier("raw", 0, int(settings.SERIES_RAW_RETENTION_S)),
        Tier("1m", 60, int(settings.SERIES_1M_RETENTION_S)),
        Tier("10m", 600, int(settings.SERIES_10M_RETENTION_S)),
    )


def point_struct(metric: str) -> struct.Struct:
    """How points of ``metric`` are packed: float64 for ``*_total`` counters, else float32."""
    return COUNTER if metric.endswith("_total") else GAUGE


def pack_point(point: struct.Struct, stamp_s: int, value: float) -> bytes:
    """One packed point; a gauge beyond float32 range is clamped to its largest value."""
    if point is GAUGE and not -_F32_MAX <= value <= _F32_MAX:
        value = math.copysign(_F32_MAX, value)
    return point.pack(stamp_s, value)


_PACK_MANY: dict[tuple[str, int], struct.Struct] = {}  # (point format, count) -> their Struct


def pack_points(point: struct.Struct, stamp_s: int, values: Sequence[float]) -> bytes:
    """``values`` as points all stamped ``stamp_s``, back to back, in one call for the lot
    (a finite gauge beyond float32 range clamped as :func:`pack_point` does)."""
    n = len(values)
    many = _PACK_MANY.get((point.format, n))
    if many is None:
        if len(_PACK_MANY) > 256:
            _PACK_MANY.clear()
        many = _PACK_MANY[point.format, n] = struct.Struct("<" + point.format[1:] * n)
    flat: list[float] = [stamp_s] * (2 * n)
    flat[1::2] = values
    try:
        return many.pack(*flat)
    except (OverflowError, struct.error):  # a gauge beyond float32 range: clamp it
        return b"".join([pack_point(point, stamp_s, float(v)) for v in values])


def decode_points(data: bytes | None, point: struct.Struct = POINT) -> list[tuple[int, float]]:
    """(epoch ms, value) pairs of a stored series; a torn tail is ignored."""
    if not data:
        return []
    usable = len(data) - len(data) % point.size
    return [(ts * 1000, value) for ts, value in point.iter_unpack(data[:usable])]


def encode_points(points: Iterable[tuple[int, float]], point: struct.Struct = POINT) -> bytes:
    """The stored form of (epoch ms, value) pairs (stamps kept to the second)."""
    return b"".join(pack_point(point, ts_ms // 1000, value) for ts_ms, value in points)


def trim_points(
    points: Sequence[tuple[int, float]], now_ms: int, retention_s: int, max_points: int
) -> list[tuple[int, float]]:
    """The points inside the retention, at most ``max_points`` (newest kept)."""
    cutoff = now_ms - retention_s * 1000
    return [(t, v) for t, v in points if t >= cutoff][-max_points:]


def tier_for(since_ms: int, now_ms: int, all_tiers: Sequence[Tier]) -> Tier:
    """The finest tier whose retention still covers ``since_ms``."""
    for tier in all_tiers:
        if since_ms >= now_ms - tier.retention_s * 1000:
            return tier
    return all_tiers[-1]


def series_bytes(all_tiers: Sequence[Tier], interval_s: int, metric: str) -> dict[str, int]:
    """Steady-state bytes of one series per tier (retention / cadence x point size)."""
    size = point_struct(metric).size
    return {t.name: t.retention_s // (t.bucket_s or interval_s) * size for t in all_tiers}


def rollup_value(metric: str, values: Sequence[float]) -> float:
    """One coarse point for a bucket's raw values: MAX of a gauge, LAST of a counter."""
    return values[-1] if point_struct(metric) is COUNTER else max(values)


def tier_limits(tier: Tier, point: struct.Struct) -> tuple[int, int]:
    """(points kept, bytes at which a series is rewritten) for one tier and point size."""
    interval = max(1, int(settings.COLLECT_INTERVAL_S))
    max_points = tier.retention_s // (tier.bucket_s or interval) + 1
    slack = max(2, max_points // 10)
    return max_points, (max_points + slack + 1) * point.size


def tier_points(
    triples: list[tuple[str, str, float]],
    buckets: Mapping[str, int],
    now_ms: int,
    all_tiers: Sequence[Tier],
) -> tuple[dict[str, list[tuple[str, str, float]]], dict[str, int], dict[str, int]]:
    """This pass's points, the new last bucket per coarse tier, and the buckets that closed.

    Raw gets every pass's points. A coarse tier's point for a bucket is rolled up
    from the raw points of that bucket when it closes (the first pass of a later
    bucket): the max of a gauge, the last value of a counter (see
    :func:`rollup_value`). The first pass ever closes nothing.
    """
    points: dict[str, list[tuple[str, str, float]]] = {}
    new_buckets = dict(buckets)
    closed: dict[str, int] = {}
    for tier in all_tiers:
        if tier.bucket_s == 0:
            points[tier.name] = triples
            continue
        bucket = now_ms // 1000 // tier.bucket_s
        previous = new_buckets.get(tier.name)
        if previous != bucket:
            if previous is not None and previous < bucket:
                closed[tier.name] = int(previous)
            new_buckets[tier.name] = bucket
    return points, new_buckets, closed
