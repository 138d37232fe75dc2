"""Stream entries as the handler sees them, and back as they are stored."""

from __future__ import annotations

from collections.abc import Mapping

from mqcore.codec import parse_headers
from mqcore.models import Message

__all__ = ["decode_message", "stored_fields"]


def _int(value: str | None, default: int) -> int:
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        return default


def stored_fields(message: Message) -> dict[str, str | bytes]:
    """The entry's fields as stored (a payload that is not UTF-8 as its original bytes)."""
    fields: dict[str, str | bytes] = dict(message.fields)
    if message.payload_bytes is not None:
        fields["payload"] = message.payload_bytes
    return fields


def decode_message(
    topic: str,
    partition: int,
    entry_id: str,
    raw: Mapping[bytes | str, bytes | str],
    *,
    default_max_retries: int = 3,
) -> Message:
    """A :class:`Message` from a stream entry's raw fields, decoded leniently.

    Bad UTF-8 in the payload keeps the bytes in ``payload_bytes``; headers that
    are not a JSON object read as empty; numbers that do not parse take defaults.
    """
    fields: dict[str, str] = {}
    payload_raw: bytes | str = b""
    for k, v in raw.items():
        name = k.decode("utf-8", errors="replace") if isinstance(k, bytes) else k
        if name == "payload":
            payload_raw = v
        fields[name] = v.decode("utf-8", errors="replace") if isinstance(v, bytes) else v
    payload_bytes: bytes | None = None
    if isinstance(payload_raw, bytes):
        try:
            payload = payload_raw.decode("utf-8")
        except UnicodeDecodeError:
            payload = fields["payload"]
            payload_bytes = payload_raw
    else:
        payload = payload_raw
    headers = parse_headers(fields.get("headers"))
    key = fields.get("key")
    return Message(
        topic=topic,
        partition=partition,
        id=entry_id,
        payload=payload,
        payload_bytes=payload_bytes,
        key=key if key else None,
        headers=headers,
        timestamp=fields.get("timestamp", ""),
        retry_count=_int(fields.get("retryCount"), 0),
        max_retries=_int(fields.get("maxRetries"), default_max_retries),
        fields=fields,
    )
