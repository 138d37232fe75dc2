"""JSON values of the console store (snapshots, collector state, health, alerts).

orjson encodes and decodes them: a 4,000-partition snapshot is about 2 MB of
JSON, written every pass and read by every page, and the standard library spent
a quarter of a collector pass on it.
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["dumps", "loads", "loads_cached", "remember"]

# slot -> (stored bytes, decoded value): the collector state this worker wrote last
_DECODED: dict[tuple[str, str], tuple[bytes, Any]] = {}


def loads(raw: bytes | None) -> Any:
    """The decoded value, None for a missing key."""
    return orjson.loads(raw) if raw else None


def loads_cached(slot: tuple[str, str], raw: bytes | None) -> Any:
    """Decode collector state once per value: the same worker usually wrote it last pass.

    Callers must treat the result as read-only below its top level.
    """
    if not raw:
        return None
    hit = _DECODED.get(slot)
    if hit is not None and hit[0] == raw:
        return hit[1]
    value = orjson.loads(raw)
    _DECODED[slot] = (raw, value)
    return value


def remember(slot: tuple[str, str], raw: bytes, value: Any) -> None:
    """Record that ``raw`` (just written) decodes to ``value``, for :func:`loads_cached`."""
    _DECODED[slot] = (raw, value)


def dumps(value: Any) -> bytes:
    """Compact UTF-8 JSON; non-string keys as strings, other values JSON cannot hold as
    their ``str``."""
    return orjson.dumps(value, default=str, option=orjson.OPT_NON_STR_KEYS)
