"""Consumer health after LinkedIn's Burrow: statuses, their order, the rules, the roll-ups.

:class:`Status` (declaration order = severity) is the snapshot's field type
(:mod:`mqcore.models`); :mod:`dashboard.status.rules` holds the pure rules over one
partition's window; :mod:`dashboard.status.enrich`
applies them to a collector snapshot and rolls partitions up to groups and topics.
"""

from __future__ import annotations

from dashboard.status.enrich import dlq_history_step, snapshot_enrich
from dashboard.status.rules import (
    WORST_FIRST,
    Sample,
    Status,
    Thresholds,
    partition_status,
    status_parse,
    thresholds_for,
    worst,
)

__all__ = [
    "WORST_FIRST",
    "Sample",
    "Status",
    "Thresholds",
    "dlq_history_step",
    "partition_status",
    "snapshot_enrich",
    "status_parse",
    "thresholds_for",
    "worst",
]
