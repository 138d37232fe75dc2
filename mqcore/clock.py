"""Wall-clock time as mqcore writes and reads it: epoch milliseconds and Java's ISO instants."""

from __future__ import annotations

import re
import time

__all__ = [
    "duration_s",
    "iso_from_ms",
    "iso_now",
    "iso_seconds",
    "ms_from_iso",
    "ms_from_text",
    "now_ms",
]


def now_ms() -> int:
    """Milliseconds since the epoch (the unit of stream ids, leases and checkpoints)."""
    return int(time.time() * 1000)


_DURATION = re.compile(r"(?:(\d{1,5})d)?(?:(\d{1,6})h)?(?:(\d{1,7})m)?(?:(\d{1,8})s)?")


def duration_s(text: object) -> int:
    """Seconds of a duration such as ``90s``, ``15m``, ``4h``, ``7d`` or ``1d12h``.

    Raises ValueError on anything else (and on zero).
    """
    raw = str(text or "").strip().lower().replace(" ", "")
    match = _DURATION.fullmatch(raw) if raw else None
    if match is None or not any(match.groups()):
        raise ValueError("duration: days, hours, minutes or seconds such as 90s, 15m, 4h or 7d")
    days, hours, minutes, seconds = (int(g or 0) for g in match.groups())
    total = days * 86_400 + hours * 3600 + minutes * 60 + seconds
    if total <= 0:
        raise ValueError("duration: must be more than zero")
    return total


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


def ms_from_iso(text: str) -> int:
    """Epoch ms of an ISO-8601 instant (``2024-01-01T00:00:00.123Z``; no zone means UTC).

    Raises ValueError on anything else, including instants that fall outside the
    calendar once shifted to UTC (``0001-01-01T00:00:00+23:59``).
    """
    from datetime import UTC, datetime

    value = text.strip()
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    parsed = datetime.fromisoformat(value)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    try:
        return int(parsed.astimezone(UTC).timestamp() * 1000)
    except (OverflowError, OSError):
        raise ValueError(f"instant out of range: {text!r}") from None


def ms_from_text(text: str) -> int:
    """Epoch ms of a time a person writes: epoch milliseconds (digits) or an ISO-8601 instant
    (:func:`ms_from_iso`: no zone means UTC). Raises ValueError on anything else."""
    value = text.strip()
    return int(value) if value.isdigit() else ms_from_iso(value)


def iso_seconds(ms: float) -> str | None:
    """ISO-8601 UTC instant to the second of epoch ``ms`` (``2024-01-01T00:00:00+00:00``),
    or None when it is outside years 1..9999 (an entry id's millisecond part may be
    anything up to 2^64)."""
    from datetime import UTC, datetime

    try:
        return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="seconds")
    except (OverflowError, OSError, ValueError):
        return None
