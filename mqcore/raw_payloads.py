"""The stored bytes of one payload, never parsed: the download of a value too large to show.

A page shows a payload over the decode cap (:mod:`mqcore.codec.limits`) as "too large,
N bytes"; these reads hand its bytes over as Redis stores them (a Java letter's or retry
item's Kryo value included), bounded by ``max_bytes``: the length is read first where
Redis can tell it (``HSTRLEN``, ``STRLEN``), else from the one entry already fetched.
Over the bound: :class:`~mqcore.errors.PayloadTooLargeError`; nothing there:
:class:`~mqcore.errors.UnknownMessageError`.
"""

from __future__ import annotations

from typing import Any

from mqcore.boundary import redis_errors
from mqcore.codec import kryo, parse_headers, validate_id
from mqcore.config import RedisClient
from mqcore.errors import PayloadRefRefusedError, PayloadTooLargeError, UnknownMessageError
from mqcore.keys import KeySpace
from mqcore.payloads import PAYLOAD_HASH_REF, check_payload_ref, is_out_of_line
from mqcore.retries.items import validate_item_id

__all__ = ["letter_payload", "message_payload", "retry_item_payload"]

_PAYLOAD = b"payload"
_KRYO_PAYLOAD = kryo.encode("payload")  # the field name as Redisson's Kryo codec writes it


def _bounded(size: int, max_bytes: int, what: str) -> None:
    if size > max_bytes:
        raise PayloadTooLargeError(
            f"{what} is {size} bytes, over the download bound of {max_bytes} bytes"
        )


def _field(raw_fields: Any, name: bytes) -> bytes | None:
    """A field of one raw entry (a flat list or a mapping), plain or Kryo-named."""
    if isinstance(raw_fields, list):
        names, values = raw_fields[0::2], raw_fields[1::2]
        fields = dict(zip(names, values, strict=False))
    else:
        fields = dict(raw_fields or {})
    value = fields.get(name)
    if value is None and name == _PAYLOAD:
        value = fields.get(_KRYO_PAYLOAD)
    return value if isinstance(value, bytes) or value is None else str(value).encode()


def _entry(client: RedisClient, key: str, entry_id: str, what: str) -> Any:
    validate_id(entry_id)
    with redis_errors(f"read {what}"):
        found = client.xrange(key, entry_id, entry_id, 1)
    if not found:
        raise UnknownMessageError(f"no {what}")
    return found[0][1]


def letter_payload(
    client: RedisClient, keys: KeySpace, topic: str, dlq_id: str, *, max_bytes: int
) -> bytes:
    """The ``payload`` field of dead letter ``dlq_id`` as stored (b"" when it has none)."""
    fields = _entry(client, keys.dlq(topic), dlq_id, f"dead letter {dlq_id} in {topic!r}")
    value = _field(fields, _PAYLOAD) or b""
    _bounded(len(value), max_bytes, f"the payload of dead letter {dlq_id}")
    return value


def retry_item_payload(
    client: RedisClient, keys: KeySpace, topic: str, item_id: str, *, max_bytes: int
) -> bytes:
    """The ``payload`` field of retry item ``item_id`` as stored (HSTRLEN first)."""
    key = keys.retry_item(topic, validate_item_id(item_id))
    with redis_errors(f"read retry item {item_id}"):
        pipe = client.pipeline(transaction=False)
        pipe.exists(key)
        pipe.hstrlen(key, _PAYLOAD)
        pipe.hstrlen(key, _KRYO_PAYLOAD)
        exists, plain, java = pipe.execute(raise_on_error=False)
    if not exists or isinstance(plain, Exception):  # gone, or no hash
        raise UnknownMessageError(f"no retry item {item_id!r} of {topic!r}")
    name = _PAYLOAD if plain or not java else _KRYO_PAYLOAD
    _bounded(int(plain or java or 0), max_bytes, f"the payload of retry item {item_id}")
    with redis_errors(f"read retry item {item_id}"):
        value = client.hget(key, name)
    return bytes(value or b"")


def message_payload(
    client: RedisClient,
    keys: KeySpace,
    topic: str,
    partition: int,
    entry_id: str,
    *,
    max_bytes: int,
) -> bytes:
    """A partition entry's payload as stored: its ``payload`` field, or the value of the
    out-of-line payload key its headers name (checked, STRLEN first)."""
    what = f"entry {entry_id} in {topic!r} partition {partition}"
    fields = _entry(client, keys.partition(topic, partition), entry_id, what)
    inline = _field(fields, _PAYLOAD)
    headers = parse_headers(_field(fields, b"headers"))
    if not is_out_of_line(headers, inline):
        value = inline or b""
        _bounded(len(value), max_bytes, f"the payload of {what}")
        return value
    try:
        ref = check_payload_ref(headers[PAYLOAD_HASH_REF], keys.payload_prefix(topic, partition))
    except PayloadRefRefusedError as exc:
        raise UnknownMessageError(f"the payload of {what}: {exc}") from None
    with redis_errors(f"read the payload of {what}"):
        size = int(client.strlen(ref))
        _bounded(size, max_bytes, f"the payload of {what}")
        stored = client.getrange(ref, 0, max_bytes) if size else None
    if stored is None and not inline:
        raise UnknownMessageError(f"the out-of-line payload of {what} is gone")
    return bytes(stored or inline or b"")
