"""The console store (its own Redis): latest snapshot, time series, incident timeline, health,
alerts.

Pages read it and the collector writes it through :class:`ConsoleStore`
(``dashboard.clusters.console_store()``: the one of the settings). One collector pass is one
MULTI/EXEC after its series points, so a worker killed mid-pass leaves the
previous pass intact and the next pass restores everything.

Modules, one per concern, with the layout they share:

* :mod:`~dashboard.store.console` - :class:`ConsoleStore`, what pages read and a pass writes,
  and the latest values (snapshot, collector state, health, alerts), big ones in pieces;
* :mod:`~dashboard.store.series` - the series: a pass's appends, roll-ups, retention, reads
  for charts; their points packed by :mod:`~dashboard.store.points` (the tiers too) and
  appended by the writer thread's script calls (:mod:`~dashboard.store.appends`);
* :mod:`~dashboard.store.incidents` - the incident timeline (bounded sorted sets);
* :mod:`~dashboard.store.keys` - the layout: every key name of the store
  (:class:`ConsoleKeys`) and how its JSON values are packed;
* :mod:`~dashboard.store.batches` - commands in bounded batches on one connection.

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
    encode_points,
    point_struct,
    series_bytes,
    tier_for,
    tiers,
)
from dashboard.store.series import decode_points, rollup_value, trim_points

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
