"""The one text filter rule of every browser: DLQ pages and bulk selections, the topic
message browser, the retry set browser."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["TEXT_MATCH_CHARS", "text_matches"]

TEXT_MATCH_CHARS = 64 * 1024  # of a payload and of each header value a text filter searches


def text_matches(payload: str, headers: Mapping[str, str], text: str) -> bool:
    """``text``, case-insensitive, in the first TEXT_MATCH_CHARS of the payload or of a
    header name or value."""
    needle, cut = text.lower(), TEXT_MATCH_CHARS
    if needle in payload[:cut].lower():
        return True
    return any(needle in k[:cut].lower() or needle in v[:cut].lower() for k, v in headers.items())
