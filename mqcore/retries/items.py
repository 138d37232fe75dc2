"""Retry items decoded: mqcore's and Java's plain hashes, and hashes Redisson's Kryo wrote.

An item hash (``streaming:mq:retry:item:{t}:{uuid}``) holds ``topic, partitionId,
payload, key, headers, retryCount, maxRetries, originalMessageId``. mqcore writes
plain strings; Java's scheduler writes them through Redisson's ``StringCodec`` as well,
with ``key`` and ``originalMessageId`` empty when the message had none, ``headers``
as a JSON object and the payload as the JSON text of the message's payload. A hash
whose field names are Kryo strings (a service using Redisson's default codec) is read
through :mod:`mqcore.codec.kryo`. Every value is data another process wrote: a
non-numeric ``retryCount`` reads as None, a hash that is gone as ``missing``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, cast

from mqcore.codec import DecodeBudget, Undecoded, decode_text, parse_headers, payload_within
from mqcore.codec.kryo import KryoError, decode, looks_kryo
from mqcore.errors import InvalidArgumentError

__all__ = [
    "ITEM_ID",
    "RetryItem",
    "RetryPage",
    "item_from_hash",
    "spend_kept",
    "validate_item_id",
]

ITEM_ID = re.compile(r"[A-Za-z0-9_-]{1,100}")  # mqcore: uuid4().hex; Java: UUID.toString()
_FOREIGN = "~"  # id of a zset member that is not a retry item key of the topic


def validate_item_id(item_id: str) -> str:
    """``item_id`` if it is a retry item id (letters, digits, ``-``, ``_``), else bad input."""
    if not isinstance(item_id, str) or not ITEM_ID.fullmatch(item_id):
        shown = repr(item_id)[:60] if isinstance(item_id, str) else type(item_id).__name__
        raise InvalidArgumentError(f"invalid retry item id {shown}: expected a uuid")
    return item_id


@dataclass(frozen=True, slots=True)
class RetryItem:
    """One member of a topic's retry set and what its hash holds."""

    id: str  # the item id (uuid); "~<member>" for a member that is not an item key
    due_ms: int
    item_topic: str  # the item's own topic field ('' is dropped when moved, as Java)
    partition: int | None
    retry_count: int | None
    max_retries: int | None
    key: str | None
    original_id: str | None
    headers: dict[str, str] = field(default_factory=dict)
    payload: str = ""
    payload_bytes: bytes | None = None  # the raw payload when it is not UTF-8
    payload_size: int = 0
    encoding: str = "plain"  # plain | java-kryo | missing (the hash is gone)
    problem: str | None = None  # why a value could not be read
    undecoded: Undecoded | None = None  # the payload, kept undecoded (too large, page budget)

    @property
    def actionable(self) -> bool:
        return not self.id.startswith(_FOREIGN)


@dataclass(frozen=True, slots=True)
class RetryPage:
    items: list[RetryItem]
    next_cursor: str | None  # continue after the last item looked at; None: nothing after
    scanned: int  # zset members looked at
    complete: bool  # False: the scan budget ended before the state's range did
    total: int  # ZCARD
    due: int  # members due now (score <= now)
    now_ms: int


def item_id_of(member: str, prefix: str) -> str:
    """The item id of a zset member (``~`` + the member when it is not a key of the topic)."""
    if member.startswith(prefix) and ITEM_ID.fullmatch(member[len(prefix) :]):
        return member[len(prefix) :]
    return _FOREIGN + member


def _int(raw: Any) -> int | None:
    if raw is None or raw.__class__ is bool:
        return None
    try:
        return int(raw)  # bytes and text alike (int(b" 3") is 3)
    except (TypeError, ValueError):
        return None


def _text(raw: Any) -> str:
    if raw.__class__ is bytes:
        try:
            return str(raw.decode())
        except UnicodeDecodeError:
            return decode_text(raw)
    return "" if raw is None else str(raw)


def _kryo_fields(
    raw: dict[Any, Any], budget: DecodeBudget | None
) -> tuple[dict[str, Any], str | None]:
    """The hash's Kryo values; by their length first, a payload over ``budget`` stays an
    :class:`Undecoded` and another value over its cap is left out (named in the problem)."""
    out: dict[str, Any] = {}
    problem = None
    for k, v in raw.items():
        if budget is not None and not budget.fits(len(k)):
            continue
        try:
            name = decode(k)
        except KryoError:
            continue
        if budget is not None and isinstance(v, bytes):
            marker = budget.admit(len(v)) if name == "payload" else None
            if marker is None and not budget.fits(len(v)):
                marker = Undecoded(len(v))
            if marker is not None:
                if name == "payload":
                    out["payload"] = marker
                else:
                    problem = f"{name}: {marker}"[:200]
                continue
        try:
            out[str(name)] = decode(v)
        except KryoError as exc:
            problem = f"{name}: {exc}"[:200]
    return out, problem


def item_from_hash(
    item_id: str, due_ms: int, raw: Any, budget: DecodeBudget | None = None
) -> RetryItem:
    """The item ``item_id`` due at ``due_ms`` from its ``HGETALL`` reply (bytes or text;
    an error reply when the key is not a hash). ``budget``: the page's decode limits (a
    payload over them is not decoded: ``undecoded`` says why; headers over the cap count
    as none)."""
    if raw.__class__ is dict and b"topic" in raw:  # the usual reply: bytes names, looked up
        get = raw.get
        return _item(item_id, due_ms, get(b"topic"), get(b"partitionId"), get(b"payload"),
                     get(b"key"), get(b"headers"), get(b"retryCount"), get(b"maxRetries"),
                     get(b"originalMessageId"), "plain", None, budget)  # fmt: skip
    if isinstance(raw, Exception):  # e.g. WRONGTYPE: the member names a key of another type
        why = f"not a retry item hash: {str(raw)[:120]}"
        return RetryItem(item_id, due_ms, "", None, None, None, None, None, encoding="missing",
                         problem=why)  # fmt: skip
    if not raw:
        return RetryItem(item_id, due_ms, "", None, None, None, None, None, encoding="missing")
    encoding, problem = "plain", cast(str | None, None)
    fields = {_text(k): v for k, v in raw.items()}
    if "topic" not in fields and all(isinstance(k, bytes) and looks_kryo(k) for k in raw):
        fields, problem = _kryo_fields(raw, budget)
        encoding = "java-kryo"
        budget = None  # the Kryo values were read within it already
    get = fields.get
    return _item(item_id, due_ms, get("topic"), get("partitionId"), get("payload"), get("key"),
                 get("headers"), get("retryCount"), get("maxRetries"), get("originalMessageId"),
                 encoding, problem, budget)  # fmt: skip


def spend_kept(item: RetryItem, budget: DecodeBudget) -> RetryItem:
    """``item``, kept on a page whose items were decoded for a filter under the cap alone,
    within the page's budget: past it its payload text is dropped for the marker."""
    if item.undecoded is not None:
        return item
    marker = budget.admit(item.payload_size)
    if marker is None:
        return item
    return replace(item, payload="", payload_bytes=None, undecoded=marker)


def _item(
    item_id: str,
    due_ms: int,
    topic: Any,
    partition: Any,
    raw_payload: Any,
    key: Any,
    headers_raw: Any,
    retry_count: Any,
    max_retries: Any,
    original: Any,
    encoding: str,
    problem: str | None,
    budget: DecodeBudget | None = None,
) -> RetryItem:
    """A RetryItem from the values of its hash fields (bytes, text, or Kryo-decoded)."""
    if isinstance(headers_raw, dict):
        headers = {str(k): str(v) for k, v in headers_raw.items() if v is not None}
    else:
        raw_headers = headers_raw if isinstance(headers_raw, bytes | str) else None
        headers = parse_headers(raw_headers)
    marker: Undecoded | None = None
    if isinstance(raw_payload, Undecoded):  # a Kryo payload kept undecoded
        text, not_utf8, size, marker = "", None, raw_payload.size, raw_payload
    elif isinstance(raw_payload, bytes):
        text, not_utf8, marker = payload_within(raw_payload, budget)
        size = len(raw_payload)
    else:
        text = "" if raw_payload is None else str(raw_payload)
        not_utf8, size = None, len(text.encode())
    return RetryItem(
        item_id, due_ms, _text(topic), _int(partition), _int(retry_count), _int(max_retries),
        _text(key) or None, _text(original) or None, headers, text, not_utf8, size, encoding,
        problem, marker,
    )  # fmt: skip
