"""Wall-clock time as mqcore writes and reads it: epoch milliseconds and Java's ISO instants."""

from __future__ import annotations

import time

__all__ = ["iso_from_ms", "iso_now", "now_ms"]


def now_ms() -> int:
    """Milliseconds since the epoch (the unit of stream ids, leases and checkpoints)."""
    return int(time.time() * 1000)


_SECOND: tuple[int, str] = (-1, "")  # the last second formatted (replays stamp many per second)


def iso_from_ms(ms: int) -> str:
    """ISO-8601 UTC instant with milliseconds (``2024-01-01T00:00:00.123Z``), the way
    Java's ``Instant.parse`` reads it; the date part is formatted once per second."""
    global _SECOND
    sec, milli = divmod(int(ms), 1000)
    cached = _SECOND
    if cached[0] != sec:
        cached = _SECOND = (sec, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec)))
    return f"{cached[1]}.{milli:03d}Z"


def iso_now(ms: int | None = None) -> str:
    """:func:`iso_from_ms` of now (or of ``ms``)."""
    return iso_from_ms(now_ms() if ms is None else ms)
