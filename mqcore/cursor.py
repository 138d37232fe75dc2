"""The one opaque page cursor: a small JSON document in unpadded URL-safe base64.

The message browser (per-partition positions) and the retry browser (score and member)
hand their ``next_cursor`` out through :func:`pack_cursor` and read it back through
:func:`unpack_cursor`, which refuses what is too long or not such a document; each reader
then checks the document's shape itself.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from mqcore.errors import InvalidArgumentError

__all__ = ["pack_cursor", "unpack_cursor"]


def pack_cursor(doc: Any) -> str:
    """``doc`` (JSON data) as a cursor."""
    raw = json.dumps(doc, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def unpack_cursor(cursor: Any, *, max_chars: int, bad: InvalidArgumentError) -> Any:
    """The JSON document of ``cursor``; raises ``bad`` when ``cursor`` is not a string of
    1..``max_chars`` characters holding one."""
    if not isinstance(cursor, str) or not 0 < len(cursor) <= max_chars:
        raise bad
    try:
        return json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, binascii.Error):
        raise bad from None
