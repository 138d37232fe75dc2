"""The JSON shape of browsed messages, shared by the CLI (``--json``) and the API.

A row carries the payload cut to ``max_bytes`` (:func:`payload_preview`), its full
size and whether it was cut; a binary payload also as hex (``payload_hex``, cut).
"""

from __future__ import annotations

from typing import Any

from mqcore.browse.scan import BrowsePage
from mqcore.clock import ms_from_iso
from mqcore.errors import InvalidArgumentError
from mqcore.models import Message

__all__ = ["ROW_PREVIEW_BYTES", "message_row", "page_dict", "parse_start_time", "payload_preview"]

ROW_PREVIEW_BYTES = 1024  # of each payload in a browsed page unless asked otherwise


def payload_preview(message: Message, max_bytes: int | None) -> dict[str, Any]:
    """The payload cut to ``max_bytes`` (None: whole): ``text`` (cut on a character
    boundary), ``binary`` (raw bytes, or None), ``size`` in bytes, ``truncated``; a payload
    kept undecoded (:mod:`mqcore.codec.limits`) is no text and its stored size."""
    if message.undecoded is not None:
        return {"text": "", "binary": None, "size": message.undecoded.size, "truncated": False}
    binary = message.payload_bytes
    if binary is not None:
        size = len(binary)
        cut = binary if max_bytes is None else binary[:max_bytes]
        return {"text": message.payload, "binary": cut, "size": size, "truncated": len(cut) < size}
    encoded = message.payload.encode("utf-8")
    size = len(encoded)
    if max_bytes is None or size <= max_bytes:
        return {"text": message.payload, "binary": None, "size": size, "truncated": False}
    text = encoded[:max_bytes].decode("utf-8", "ignore")
    return {"text": text, "binary": None, "size": size, "truncated": True}


def message_row(message: Message, max_bytes: int | None) -> dict[str, Any]:
    preview = payload_preview(message, max_bytes)
    text = preview["text"]
    if preview["binary"] is not None and max_bytes is not None:
        text = text[:max_bytes]
    return {
        "partition": message.partition,
        "id": message.id,
        "key": message.key,
        "timestamp": message.timestamp,
        "retry_count": message.retry_count,
        "max_retries": message.max_retries,
        "headers": dict(message.headers),
        "payload": text,
        "payload_hex": preview["binary"].hex() if preview["binary"] is not None else None,
        "payload_size": preview["size"],
        "payload_truncated": preview["truncated"],
        # kept undecoded ({"size", "reason", "text"}): the bytes through the payload download
        "payload_undecoded": message.undecoded.as_dict() if message.undecoded else None,
    }


def page_dict(
    page: BrowsePage, max_bytes: int | None, messages: list[Message] | None = None
) -> dict[str, Any]:
    """``page`` as the ``--json`` / API document (``messages``: the page's, masked when needed)."""
    return {
        "topic": page.topic,
        "order": page.order,
        "partitions": page.partitions,
        "partition_count": page.partition_count,
        "messages": [
            message_row(m, max_bytes) for m in (page.messages if messages is None else messages)
        ],
        "next_cursor": page.next_cursor,
        "scanned": page.scanned,
        "max_scan": page.max_scan,
        "stopped_at_bound": page.stopped_at_bound,
    }


def parse_start_time(text: str) -> int:
    """A start time as epoch milliseconds: digits, or an ISO-8601 instant (no zone: UTC)."""
    value = text.strip()
    if value.isdigit():
        return int(value)
    try:
        return ms_from_iso(value)
    except ValueError:
        raise InvalidArgumentError(
            f"start time {text[:40]!r}: use epoch milliseconds or an ISO-8601 instant"
        ) from None
