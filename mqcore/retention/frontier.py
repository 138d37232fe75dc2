"""Commit frontier hashes (``KeySpace.commit_frontier``): group -> the highest id it acked.

Java writes them through Redisson's default codec (Kryo: a short string is ``0x03``
followed by its ASCII bytes, the last one with its high bit set); other writers
write plain text. A field or value that is neither, or a value that is not a
stream id, is left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mqcore.codec import decode_text, validate_id
from mqcore.errors import InvalidIdError

__all__ = ["frontier_ids"]


def _text(raw: Any) -> str:
    if isinstance(raw, bytes) and len(raw) >= 2 and raw[0] == 0x03 and raw[-1] & 0x80:
        body = raw[1:-1] + bytes([raw[-1] & 0x7F])
        if body.isascii():
            return body.decode("ascii")
    return decode_text(raw)


def frontier_ids(raw: Mapping[Any, Any]) -> dict[str, str]:
    """Group name -> frontier id of an ``HGETALL`` reply (both encodings)."""
    out: dict[str, str] = {}
    for field, value in raw.items():
        try:
            out[_text(field)] = validate_id(_text(value))
        except InvalidIdError:
            continue
    return out
