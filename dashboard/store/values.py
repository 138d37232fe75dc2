"""JSON values of the console store (snapshots, collector state, health, alerts)."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["dumps", "loads", "loads_cached", "remember"]

# slot -> (stored bytes, decoded value): the collector state this worker wrote last
_DECODED: dict[tuple[str, str], tuple[bytes, Any]] = {}


def loads(raw: bytes | None) -> Any:
    """The decoded value, None for a missing key."""
    return json.loads(raw) if raw else None


def loads_cached(slot: tuple[str, str], raw: bytes | None) -> Any:
    """Decode collector state once per value: the same worker usually wrote it last pass.

    Callers must treat the result as read-only below its top level.
    """
    if not raw:
        return None
    hit = _DECODED.get(slot)
    if hit is not None and hit[0] == raw:
        return hit[1]
    value = json.loads(raw)
    _DECODED[slot] = (raw, value)
    return value


def remember(slot: tuple[str, str], raw: bytes, value: Any) -> None:
    """Record that ``raw`` (just written) decodes to ``value``, for :func:`loads_cached`."""
    _DECODED[slot] = (raw, value)


def dumps(value: Any) -> str:
    """Compact JSON; values that JSON cannot hold are written as their ``str``."""
    # check_circular off: our values are trees (a third faster on a 2 MB snapshot)
    return json.dumps(value, separators=(",", ":"), default=str, check_circular=False)
