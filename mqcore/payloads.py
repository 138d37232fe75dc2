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

A reference is data the producer wrote: it is read only when it names a payload
key of the entry's own partition (``KeySpace.payload_prefix``) and only up to a
size bound; otherwise :class:`~mqcore.errors.PayloadRefRefusedError`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from mqcore.boundary import redis_errors
from mqcore.codec.limits import DecodeBudget, Undecoded
from mqcore.config import DEFAULT_MAX_PAYLOAD_BYTES, RedisClient
from mqcore.errors import PayloadRefRefusedError

__all__ = [
    "FORMAT_RAW",
    "PAYLOAD_FORMAT",
    "PAYLOAD_HASH_REF",
    "PAYLOAD_MISSING",
    "PAYLOAD_MISSING_REF",
    "PAYLOAD_ORIGINAL_SIZE",
    "PAYLOAD_REF_REFUSED",
    "PAYLOAD_STORAGE_TYPE",
    "STORAGE_TYPE_HASH",
    "STORAGE_TYPE_INLINE",
    "check_payload_ref",
    "decode_stored_payload",
    "encode_stored_payload",
    "fetch_payload",
    "is_out_of_line",
    "load_payload",
    "owned_prefix",
    "resolve_payload",
    "resolve_within",
    "stored_payload_limit",
    "stored_size",
    "unlinks_owned_payloads",
]

PAYLOAD_STORAGE_TYPE = "x-payload-storage-type"
PAYLOAD_HASH_REF = "x-payload-hash-ref"
PAYLOAD_ORIGINAL_SIZE = "x-payload-original-size"
PAYLOAD_MISSING = "x-payload-missing"
PAYLOAD_MISSING_REF = "x-payload-missing-ref"
PAYLOAD_FORMAT = "x-payload-format"  # mqcore addition: "raw" for non-UTF-8 bytes
PAYLOAD_REF_REFUSED = "x-payload-ref-refused"  # mqcore addition: why a reference was not read
STORAGE_TYPE_INLINE = "inline"
STORAGE_TYPE_HASH = "hash"
FORMAT_RAW = "raw"
_REF_SUFFIX = re.compile(r"[A-Za-z0-9_-]+")  # the uuid part of a payload key
_MAX_REF_SUFFIX = 100


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


def stored_payload_limit(max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES) -> int:
    """Bytes a stored payload may take: its JSON text escapes some characters (quotes,
    backslashes) of a payload of at most ``max_payload_bytes``."""
    return 2 * max_payload_bytes + 2


def unlinks_owned_payloads(encoding: str) -> bool:
    """Whether deleting an entry, retry item or letter unlinks the payload key it owns: not on
    ``java-kryo`` deployments, where a Java service's retries and letters share the entry's
    payload key."""
    return encoding != "java-kryo"


def owned_prefix(encoding: str, prefix: str) -> str:
    """The scripts' payload prefix argument: ``prefix``, or '' (they unlink none) where
    :func:`unlinks_owned_payloads` says no."""
    return prefix if unlinks_owned_payloads(encoding) else ""


def check_payload_ref(ref: str, prefix: str) -> str:
    """``ref`` if it names a payload key of the entry's own partition (``prefix`` is
    ``KeySpace.payload_prefix``), else PayloadRefRefusedError."""
    rest = ref[len(prefix) :] if ref.startswith(prefix) else ""
    if not rest or len(rest) > _MAX_REF_SUFFIX or not _REF_SUFFIX.fullmatch(rest):
        raise PayloadRefRefusedError(
            "out-of-line payload reference refused: it does not name a payload key of "
            "this entry's partition"
        )
    return ref


def load_payload(
    client: RedisClient,
    headers: Mapping[str, str],
    *,
    prefix: str,
    max_bytes: int | None = None,
) -> str | bytes | None:
    """The out-of-line payload an entry's headers point at; None when the key is gone.

    The reference must name a key of the entry's own partition (``prefix``, see
    :func:`check_payload_ref`), and the value is read with a bound (STRLEN, then
    GETRANGE of at most ``max_bytes``): PayloadRefRefusedError otherwise.
    """
    ref = headers.get(PAYLOAD_HASH_REF)
    if not ref:
        return None
    check_payload_ref(ref, prefix)
    limit = stored_payload_limit() if max_bytes is None else max_bytes
    with redis_errors("load out-of-line payload"):
        pipe = client.pipeline(transaction=False)
        pipe.exists(ref)
        pipe.strlen(ref)
        pipe.getrange(ref, 0, limit)
        exists, size, value = pipe.execute(raise_on_error=False)
        for reply in (exists, size, value):
            if isinstance(reply, Exception) and "WRONGTYPE" not in str(reply):
                raise reply
    if isinstance(size, Exception) or isinstance(value, Exception):  # not a string key
        raise PayloadRefRefusedError(
            "out-of-line payload reference refused: the key is not a stored payload"
        )
    if not exists:
        return None
    if int(size) > limit or len(value) > limit:
        raise PayloadRefRefusedError(
            f"out-of-line payload reference refused: the stored value is over {limit} bytes"
        )
    return decode_stored_payload(bytes(value), headers)


def stored_size(client: RedisClient, headers: Mapping[str, str], *, prefix: str) -> int | None:
    """``STRLEN`` of the payload key an entry's headers point at, before anything is read;
    None when there is no reference, it is refused (:func:`check_payload_ref`) or the key is
    no string (:func:`load_payload` then says why)."""
    ref = headers.get(PAYLOAD_HASH_REF)
    try:
        check_payload_ref(ref or "", prefix)
    except PayloadRefRefusedError:
        return None
    with redis_errors("read the size of an out-of-line payload"):
        pipe = client.pipeline(transaction=False)
        pipe.strlen(ref)
        [size] = pipe.execute(raise_on_error=False)
        if isinstance(size, Exception) and "WRONGTYPE" not in str(size):
            raise size
    return None if isinstance(size, Exception) else int(size)


def resolve_payload(
    client: RedisClient,
    headers: Mapping[str, str],
    *,
    prefix: str,
    max_bytes: int,
    inline: bytes | None,
) -> tuple[bytes | None, dict[str, str]]:
    """An out-of-line entry's payload bytes for display, and its headers.

    A gone key leaves ``inline``; a refused reference gives a "reference refused"
    marker as the payload and the reason in the ``x-payload-ref-refused`` header.
    """
    try:
        stored = load_payload(client, headers, prefix=prefix, max_bytes=max_bytes)
    except PayloadRefRefusedError as exc:
        return f"[{exc}]".encode(), {**headers, PAYLOAD_REF_REFUSED: str(exc)}
    if stored is None:
        return inline, dict(headers)
    return (stored.encode() if isinstance(stored, str) else stored), dict(headers)


def resolve_within(
    client: RedisClient,
    headers: Mapping[str, str],
    *,
    prefix: str,
    max_bytes: int,
    inline: bytes | None,
    budget: DecodeBudget,
) -> tuple[bytes | None, dict[str, str], Undecoded | None]:
    """:func:`resolve_payload` for a reader with decode limits: a stored value longer than
    ``budget``'s cap (``STRLEN`` first) is not read, and its marker comes back instead."""
    size = stored_size(client, headers, prefix=prefix)
    if size is not None and not budget.fits(size):
        return None, dict(headers), Undecoded(size)
    raw, out = resolve_payload(client, headers, prefix=prefix, max_bytes=max_bytes, inline=inline)
    return raw, out, None


def fetch_payload(
    client: RedisClient, headers: Mapping[str, str], *, prefix: str
) -> tuple[str | bytes | None, dict[str, str]]:
    """An out-of-line entry's payload for a reader that hands it on (consumer, Spark
    source), and its headers: a gone key gives None with ``x-payload-missing`` and
    ``x-payload-missing-ref``; a refused reference gives None with the missing marks
    and the reason in ``x-payload-ref-refused``."""
    out = dict(headers)
    try:
        value = load_payload(client, headers, prefix=prefix)
    except PayloadRefRefusedError as exc:
        value = None
        out[PAYLOAD_REF_REFUSED] = str(exc)
    if value is None:
        out[PAYLOAD_MISSING] = "true"
        out[PAYLOAD_MISSING_REF] = headers.get(PAYLOAD_HASH_REF, "")
    return value, out
