"""Dead-letter entries decoded into :class:`~mqcore.models.DlqLetter`, and replay records.

Letters are read the way Java writes them (docs/redis-layout.md, DLQ entries): the
real partition is ``headers.partitionId``; the top-level ``partitionId`` (always 0
in Java) is only a fallback.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from operator import itemgetter
from typing import Any

from mqcore.codec import _SCAN as _SCAN_HEADERS
from mqcore.codec import (
    DecodeBudget,
    Undecoded,
    decode_text,
    kryo,
    parse_headers,
    payload_text,
    payload_within,
)
from mqcore.models import DlqLetter, ReplayRecord

__all__ = [
    "REPLAYED_HEADER",
    "REPLAY_SEQ_HEADER",
    "letter_from_entry",
    "letters_from_entries",
    "parse_records",
    "plain_fields",
    "spend_kept",
]

REPLAYED_HEADER = "x-replayed-from-dlq"  # on a replayed entry: the id of its letter
# on a replayed entry: which replay of that letter it is (1 = the first; the index + 1
# of its record), kept through retries and dead-lettering, so a failure is matched to
# its own replay, not to every replay of the letter
REPLAY_SEQ_HEADER = "x-replay-seq"


def _num(raw: Any, default: int) -> int:
    try:
        return int(raw)
    except (TypeError, ValueError):
        return default


def _bytes_keyed(raw_fields: Any) -> dict[bytes, Any]:
    """Entry fields as ``{bytes: bytes}`` from a dict (either key type) or a flat RESP list."""
    if raw_fields.__class__ is list:
        pairs = iter(raw_fields)
        return dict(zip(pairs, pairs, strict=False))
    if not isinstance(raw_fields, dict):
        return {}
    if all(k.__class__ is bytes for k in raw_fields):
        return raw_fields
    return {
        (k if isinstance(k, bytes) else str(k).encode()): (
            v if isinstance(v, bytes) or v is None else str(v).encode()
        )
        for k, v in raw_fields.items()
    }


def plain_fields(raw_fields: Any, budget: DecodeBudget | None = None) -> dict[bytes, Any]:
    """A letter's fields in mqcore's plain layout, whichever layout it was written in
    (``budget``: a Kryo payload over its cap or past it stays an :class:`Undecoded`)."""
    fields = _bytes_keyed(raw_fields)
    if any(kryo.looks_kryo(name) for name in fields):  # written by Java through Redisson
        fields = _plain_fields(fields, budget)
    return fields


def _plain_fields(fields: dict[bytes, Any], budget: DecodeBudget | None) -> dict[bytes, Any]:
    """A letter Java wrote through Redisson's Kryo codec, in the plain layout mqcore writes:
    names and text as UTF-8, numbers as their digits, the headers map as JSON. A value of a
    class not read here becomes a note saying so (the letter is still shown and counted), a
    value over ``budget``'s cap a "too large" note, a payload an :class:`Undecoded`."""
    out: dict[bytes, Any] = {}
    for name, value in fields.items():
        if budget is not None and not budget.fits(len(name)):
            out[name] = value
            continue
        try:
            key = kryo.decode(name)
        except kryo.KryoError:
            out[name] = value
            continue
        if budget is not None and isinstance(value, bytes):  # the length decides, first
            marker = budget.admit(len(value)) if key == "payload" else None
            if marker is None and not budget.fits(len(value)):
                marker = Undecoded(len(value))
            if marker is not None:
                out[str(key).encode()] = marker if key == "payload" else f"[{marker}]".encode()
                continue
        try:
            decoded = kryo.decode(value) if isinstance(value, bytes) else value
        except kryo.KryoError as exc:
            decoded = f"[Java value not readable here: {exc}; {len(value)} bytes]"
        if isinstance(decoded, dict):
            decoded = json.dumps({str(k): str(v) for k, v in decoded.items()})
        elif decoded is not None and not isinstance(decoded, str):
            decoded = str(decoded).lower() if isinstance(decoded, bool) else str(decoded)
        out[str(key).encode()] = None if decoded is None else decoded.encode()
    return out


def _partition_of(headers: dict[str, str], top_level: Any) -> int:
    """The ``partitionId`` header when it is a partition, else the top-level field (default 0)."""
    hp = headers.get("partitionId")
    if hp is not None:
        try:
            partition = int(hp)
        except ValueError:
            partition = -1
        if partition >= 0:
            return partition
    return _num(top_level, 0)


def letter_from_entry(
    entry_id: Any, raw_fields: Any, budget: DecodeBudget | None = None
) -> DlqLetter:
    """A DLQ stream entry as a :class:`DlqLetter` (partition from headers first).

    ``raw_fields`` is a field mapping (bytes or str keys) or the flat list Redis
    sends. Kept lean: a page of 50 letters must decode in about the time of its
    XREVRANGE. ``budget``: the page's decode limits (a payload over them is not decoded:
    ``undecoded`` says why; headers over the cap count as none).
    """
    fields = _bytes_keyed(raw_fields)
    java = any(kryo.looks_kryo(name) for name in fields)
    get = (_plain_fields(fields, budget) if java else fields).get
    headers = parse_headers(get(b"headers"))
    partition = _partition_of(headers, get(b"partitionId"))
    key = get(b"key")
    raw_payload = get(b"payload")
    marker: Undecoded | None = None
    if isinstance(raw_payload, Undecoded):  # Java's Kryo payload, kept undecoded
        text, binary, marker = "", None, raw_payload
    elif java:  # decoded within the budget already
        text, binary = payload_text(raw_payload)
    else:
        text, binary, marker = payload_within(raw_payload, budget)
    return DlqLetter(
        entry_id.decode() if entry_id.__class__ is bytes else str(entry_id),
        partition,
        decode_text(get(b"originalMessageId")),
        _num(get(b"retryCount"), 0),
        _num(get(b"maxRetries"), 3),
        decode_text(get(b"failedAt")),
        decode_text(get(b"timestamp")),
        decode_text(key) if key else headers.get("key") or None,
        text,
        binary,
        headers,
        decode_text(get(b"originalTopic")),
        undecoded=marker,
    )


def spend_kept(letter: DlqLetter, budget: DecodeBudget) -> DlqLetter:
    """``letter``, kept on a page whose letters were decoded for a filter under the cap
    alone, within the page's budget: past it its payload text is dropped for the marker."""
    if letter.undecoded is None:
        raw = letter.payload_bytes
        size = len(raw) if raw is not None else len(letter.payload.encode("utf-8", "replace"))
        marker = budget.admit(size)
        if marker is not None:
            letter.payload, letter.payload_bytes, letter.undecoded = "", None, marker
    return letter


_WANTED = (
    b"headers",
    b"partitionId",
    b"key",
    b"payload",
    b"originalMessageId",
    b"retryCount",
    b"maxRetries",
    b"failedAt",
    b"timestamp",
    b"originalTopic",
)


def letters_from_entries(
    entries: Sequence[Any], budget: DecodeBudget | None = None
) -> list[DlqLetter]:
    """:func:`letter_from_entry` for a page of entries as Redis sends them (the page's hot loop).

    Letters of one writer share a field layout: the positions of the wanted
    fields are worked out once per layout and read with one ``itemgetter``.
    Anything unusual (a mapping, Kryo, headers over the cap) takes :func:`letter_from_entry`.
    ``budget``: the page's decode limits, spent on payloads in order.
    """
    out: list[DlqLetter] = []
    append = out.append
    layout: list[Any] | None = None
    getter: Any = None
    padded = False  # a wanted field is missing from the layout: read from [*raw, None]
    scan, make, partition_of = _SCAN_HEADERS, DlqLetter, _partition_of
    cap = budget.max_value_bytes if budget is not None else None
    for entry_id, raw in entries:
        if raw.__class__ is not list or entry_id.__class__ is not bytes:
            append(letter_from_entry(entry_id, raw, budget))
            continue
        names = raw[0::2]
        if names != layout:
            if any(kryo.looks_kryo(n) for n in names if n.__class__ is bytes):
                append(letter_from_entry(entry_id, raw, budget))  # Java's Kryo layout
                continue
            layout = names
            where = {name: 2 * i + 1 for i, name in enumerate(names)}
            padded = any(name not in where for name in _WANTED)
            getter = itemgetter(*(where.get(name, len(raw)) for name in _WANTED))
        try:
            hraw, praw, key, payload, orig, rc, mr, failed, stamp, otopic = getter(
                [*raw, None] if padded else raw
            )
            headers: dict[str, str] = {}
            if hraw and cap is not None and len(hraw) > cap:
                raise ValueError("headers over the cap")
            if hraw:
                text = hraw.decode()
                try:
                    data, end = scan(text, 0)
                except StopIteration:
                    data, end = None, -1
                if end != len(text) or data.__class__ is not dict:
                    raise ValueError("unusual headers")
                for v in data.values():
                    if v.__class__ is not str:
                        raise ValueError("unusual headers")
                headers = data
            letter = make(
                entry_id.decode(),
                partition_of(headers, praw),
                orig.decode() if orig is not None else "",
                int(rc) if rc is not None else 0,  # not a number: the careful path
                int(mr) if mr is not None else 3,
                failed.decode() if failed is not None else "",
                stamp.decode() if stamp is not None else "",
                key.decode() if key else headers.get("key") or None,
                "",
                None,
                headers,
                otopic.decode() if otopic is not None else "",
            )
        except (ValueError, UnicodeDecodeError, AttributeError, TypeError):
            append(letter_from_entry(entry_id, raw, budget))  # the careful path decides
            continue
        # the payload last, once nothing can send the letter to the careful path
        if payload is not None:
            letter.payload, letter.payload_bytes, letter.undecoded = payload_within(payload, budget)
        append(letter)
    return out


def parse_records(raw: Any) -> list[ReplayRecord]:
    """Replay records stored as a JSON list (lenient: bad JSON reads as no records)."""
    import json

    if not raw:
        return []
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return []
    out = []
    for r in data if isinstance(data, list) else []:
        if not isinstance(r, dict):
            continue
        try:
            out.append(
                ReplayRecord(
                    dlq_id=str(r.get("dlq_id", "")),
                    new_id=str(r.get("new_id", "")),
                    topic=str(r.get("topic", "")),
                    partition=int(r.get("partition", -1)),
                    at_ms=int(r.get("at_ms", 0)),
                    by=str(r.get("by", "")),
                    forced=bool(r.get("forced", False)),
                )
            )
        except (TypeError, ValueError):
            continue
    return out
