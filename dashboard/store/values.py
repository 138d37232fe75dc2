"""JSON values of the console store (snapshots, collector state, health, alerts).

orjson encodes and decodes them: a 4,000-partition snapshot is about 2 MB of
JSON, written every pass and read by every page, and the standard library spent
a quarter of a collector pass on it.
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = [
    "dumps",
    "loads",
    "loads_cached",
    "remember",
    "versioned_get",
    "versioned_put",
]

# slot -> (stored bytes, decoded value): the collector state this worker wrote last
_DECODED: dict[tuple[str, str], tuple[bytes, Any]] = {}
# slot -> (version, decoded value): values stored with a version key (the snapshot), so a
# reader learns from a few bytes that the megabytes it decoded last time are still current
_VERSIONED: dict[tuple[str, str], tuple[bytes, Any]] = {}


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


def versioned_get(slot: tuple[str, str], version: bytes | None) -> Any:
    """The value decoded for ``slot`` at ``version``; None when it is not at hand.

    Shared between callers (requests of one process): treat it as read-only.
    """
    hit = _VERSIONED.get(slot)
    if version is None or hit is None or hit[0] != version:
        return None
    return hit[1]


def versioned_put(slot: tuple[str, str], version: bytes | None, value: Any) -> None:
    """Keep ``value`` as ``slot``'s decoded value at ``version`` (forget it without one)."""
    if version is None or value is None:
        _VERSIONED.pop(slot, None)
    else:
        _VERSIONED[slot] = (version, value)


def dumps(value: Any) -> bytes:
    """Compact UTF-8 JSON; non-string keys as strings, other values JSON cannot hold as
    their ``str``.

    orjson's non-string-key option costs a third more on a snapshot whose keys are all
    strings: it is only used when a key is not one (same bytes either way)."""
    try:
        return orjson.dumps(value, default=str)
    except orjson.JSONEncodeError:
        return orjson.dumps(value, default=str, option=orjson.OPT_NON_STR_KEYS)
