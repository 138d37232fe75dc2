"""The retry item a retried entry becomes (the retry envelope Java's scheduler writes)."""

from __future__ import annotations

import json
from collections.abc import Mapping

from mqcore.codec import decode_text, parse_headers

__all__ = ["retry_item_fields"]


def retry_item_fields(
    fields: Mapping[str, str | bytes],
    *,
    topic: str,
    partition: int,
    entry_id: str,
    default_max_retries: int = 3,
) -> dict[str, str | bytes]:
    """The SCHEMA retry envelope for an entry being retried (``retryCount`` incremented).

    Headers keep everything the entry had, plus ``x-original-message-id`` (the
    first id of the message, set on its first retry) and ``partitionId``.
    """
    headers = parse_headers(fields.get("headers"))
    headers.setdefault("x-original-message-id", entry_id)
    headers["partitionId"] = str(partition)
    try:
        retry_count = int(decode_text(fields.get("retryCount")) or 0)
    except ValueError:
        retry_count = 0
    max_retries_text = decode_text(fields.get("maxRetries"))
    try:
        max_retries = int(max_retries_text) if max_retries_text else default_max_retries
    except ValueError:
        max_retries = default_max_retries
    item: dict[str, str | bytes] = {
        "topic": topic,
        "partitionId": str(partition),
        "payload": fields.get("payload", ""),
        "headers": json.dumps(headers, separators=(",", ":"), ensure_ascii=False),
        "retryCount": str(retry_count + 1),
        "maxRetries": str(max_retries),
        "originalMessageId": entry_id,
    }
    key = decode_text(fields.get("key"))
    if key:
        item["key"] = key
    timestamp = fields.get("timestamp")
    if timestamp is not None:
        item["timestamp"] = timestamp
    return item
