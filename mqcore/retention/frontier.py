"""Commit frontier hashes (``KeySpace.commit_frontier``): group -> the highest id it acked.

Java writes them through Redisson's default codec (:mod:`mqcore.codec.kryo`); other
writers write plain text. A field or value that is neither, or a value that is not a
stream id, is left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mqcore.codec import decode_text, kryo, validate_id
from mqcore.errors import InvalidIdError

__all__ = ["frontier_ids"]


def _text(raw: Any) -> str:
    if isinstance(raw, bytes) and kryo.looks_kryo(raw):
        try:
            return str(kryo.decode(raw))
        except kryo.KryoError:
            pass
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
