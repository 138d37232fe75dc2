"""The console store (its own Redis): latest snapshot, time series, incident timeline, health,
alerts.

Pages read it and the collector writes it through :class:`ConsoleStore`
(``dashboard.clusters.console_store()``: the one of the settings). One collector pass is one
MULTI/EXEC after its series points, so a worker killed mid-pass leaves the
previous pass intact and the next pass restores everything.

Modules:

* :mod:`~dashboard.store.points` - how a point is packed, tiers, roll-up and
  retention arithmetic (pure);
* :mod:`~dashboard.store.values` - the JSON values (snapshot, state, health, alerts);
* :mod:`~dashboard.store.batches` - commands in bounded batches on redis-py pipelines;
* :mod:`~dashboard.store.series_write` - this pass's points, the series index, roll-ups;
* :mod:`~dashboard.store.series_read` - points of a window for charts;
* :mod:`~dashboard.store.incidents` - the incident timeline (bounded sorted sets);
* :mod:`~dashboard.store.retention` - rewriting series past their cap, dropping vanished ones;
* :mod:`~dashboard.store.keys` - every key name of the store (:class:`ConsoleKeys`);
* :mod:`~dashboard.store.console` - :class:`ConsoleStore`, what pages read and a pass writes.

Series of vanished entities are deleted after the longest retention; the bytes per
series are bounded by retention / cadence x point size (see :func:`series_bytes`).
"""

from __future__ import annotations

from dashboard.store.console import ConsoleStore
from dashboard.store.points import (
    COUNTER,
    GAUGE,
    POINT,
    TIERS,
    Tier,
    decode_points,
    encode_points,
    point_struct,
    rollup_value,
    series_bytes,
    tier_for,
    tiers,
    trim_points,
)

__all__ = [
    "COUNTER",
    "GAUGE",
    "POINT",
    "TIERS",
    "ConsoleStore",
    "Tier",
    "decode_points",
    "encode_points",
    "point_struct",
    "rollup_value",
    "series_bytes",
    "tier_for",
    "tiers",
    "trim_points",
]
