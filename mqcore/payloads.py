"""Out-of-line payloads, stored like Java's PayloadLifecycleManager does.

A payload larger than ``MQConfig.inline_payload_bytes`` (64 KB, Java's
``MAX_INLINE_PAYLOAD_SIZE``) is written to its own string key
``payload:{t}:p:{i}:{uuid}`` and the entry carries no ``payload`` field but the
headers ``x-payload-storage-type=hash``, ``x-payload-hash-ref=<key>`` and
``x-payload-original-size``. Java stores the payload as JSON text (a text
payload becomes a JSON string); mqcore does the same for text, and stores bytes
that are not UTF-8 as they are, marked ``x-payload-format=raw``. The key is also
added to the topic's payload index set, so deleting the topic finds it.
The write is one Lua script with the XADD (nothing is half-written).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from mqcore.boundary import redis_errors
from mqcore.config import RedisClient

__all__ = [
    "FORMAT_RAW",
    "PAYLOAD_FORMAT",
    "PAYLOAD_HASH_REF",
    "PAYLOAD_MISSING",
    "PAYLOAD_MISSING_REF",
    "PAYLOAD_ORIGINAL_SIZE",
    "PAYLOAD_STORAGE_TYPE",
    "STORAGE_TYPE_HASH",
    "STORAGE_TYPE_INLINE",
    "decode_stored_payload",
    "encode_stored_payload",
    "is_out_of_line",
    "load_payload",
]

PAYLOAD_STORAGE_TYPE = "x-payload-storage-type"
PAYLOAD_HASH_REF = "x-payload-hash-ref"
PAYLOAD_ORIGINAL_SIZE = "x-payload-original-size"
PAYLOAD_MISSING = "x-payload-missing"
PAYLOAD_MISSING_REF = "x-payload-missing-ref"
PAYLOAD_FORMAT = "x-payload-format"  # mqcore addition: "raw" for non-UTF-8 bytes
STORAGE_TYPE_INLINE = "inline"
STORAGE_TYPE_HASH = "hash"
FORMAT_RAW = "raw"


def encode_stored_payload(payload: str | bytes) -> tuple[bytes, bool]:
    """Value for the payload key, and whether it is raw bytes (not JSON text)."""
    if isinstance(payload, bytes):
        try:
            text = payload.decode("utf-8")
        except UnicodeDecodeError:
            return payload, True
    else:
        text = payload
    return json.dumps(text, ensure_ascii=False).encode("utf-8"), False


def decode_stored_payload(value: bytes, headers: Mapping[str, str]) -> str | bytes:
    """Payload from the stored value: JSON text as Java writes it, or raw bytes."""
    if headers.get(PAYLOAD_FORMAT) == FORMAT_RAW:
        return value
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError:
        return value
    try:
        decoded: Any = json.loads(text)
    except ValueError:
        return text
    # Java stores any object as JSON; a non-string payload is handed over as its JSON text.
    return decoded if isinstance(decoded, str) else text


def is_out_of_line(headers: Mapping[str, str], payload_field: bytes | None) -> bool:
    """Java's rule: a hash ref plus storage type ``hash`` or an absent/empty payload field."""
    if not headers.get(PAYLOAD_HASH_REF):
        return False
    return headers.get(PAYLOAD_STORAGE_TYPE) == STORAGE_TYPE_HASH or not payload_field


def load_payload(client: RedisClient, headers: Mapping[str, str]) -> str | bytes | None:
    """The out-of-line payload an entry's headers point at; None when the key is gone."""
    ref = headers.get(PAYLOAD_HASH_REF)
    if not ref:
        return None
    with redis_errors("load out-of-line payload"):
        value = client.get(ref)
    if value is None:
        return None
    return decode_stored_payload(value, headers)
