"""The point format of the console store's series, and their tiers: how a point is packed
(the one packer of series values; :mod:`dashboard.store.series` reads them back).

A series is one Redis string of packed points, APPENDed each pass: gauges take
8 bytes (``<If``: uint32 epoch seconds, float32 value), ``*_total`` counters 12
(``<Id``: float64, exact to 2^53). Tiers: ``raw`` (every pass), ``1m`` and
``10m``: when a bucket closes, the raw points of that bucket become one point of
the tier stamped with the bucket start. A series longer than its retention by 10% is
rewritten with only the points inside the retention (see :func:`tier_limits`), so the
bytes per series are bounded by retention / cadence x point size (:func:`series_bytes`).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.conf import settings

__all__ = [
    "COUNTER",
    "GAUGE",
    "POINT",
    "TIERS",
    "Lengths",
    "Tier",
    "encode_points",
    "pack_point",
    "pack_points",
    "point_struct",
    "series_bytes",
    "tier_for",
    "tier_limits",
    "tiers",
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


def encode_points(points: Iterable[tuple[int, float]], point: struct.Struct = POINT) -> bytes:
    """The stored form of (epoch ms, value) pairs (stamps kept to the second)."""
    return b"".join(pack_point(point, ts_ms // 1000, value) for ts_ms, value in points)


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


def tier_limits(tier: Tier, point: struct.Struct) -> tuple[int, int]:
    """(points kept, bytes at which a series is rewritten) for one tier and point size."""
    interval = max(1, int(settings.COLLECT_INTERVAL_S))
    max_points = tier.retention_s // (tier.bucket_s or interval) + 1
    slack = max(2, max_points // 10)
    return max_points, (max_points + slack + 1) * point.size


# series key -> (bytes after this pass, tier, point format), for the series near their cap
Lengths = dict[str, tuple[int, Tier, struct.Struct]]
