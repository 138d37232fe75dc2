"""Wall-clock time as mqcore writes and reads it: epoch milliseconds and Java's ISO instants."""

from __future__ import annotations

import time
from datetime import UTC, datetime

__all__ = ["iso_from_ms", "iso_now", "now_ms"]


def now_ms() -> int:
    """Milliseconds since the epoch (the unit of stream ids, leases and checkpoints)."""
    return int(time.time() * 1000)


def iso_from_ms(ms: int) -> str:
    """ISO-8601 UTC instant with milliseconds, the way Java's ``Instant.toString`` reads it."""
    stamp = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def iso_now(ms: int | None = None) -> str:
    """:func:`iso_from_ms` of now (or of ``ms``)."""
    return iso_from_ms(now_ms() if ms is None else ms)
