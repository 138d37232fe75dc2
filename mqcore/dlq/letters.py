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
from mqcore.codec import decode_text, kryo, parse_headers
from mqcore.models import DlqLetter, ReplayRecord

__all__ = [
    "REPLAYED_HEADER",
    "REPLAY_SEQ_HEADER",
    "letter_from_entry",
    "letters_from_entries",
    "parse_records",
    "plain_fields",
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


def plain_fields(raw_fields: Any) -> dict[bytes, Any]:
    """A letter's fields in mqcore's plain layout, whichever layout it was written in."""
    fields = _bytes_keyed(raw_fields)
    if any(kryo.looks_kryo(name) for name in fields):  # written by Java through Redisson
        fields = _plain_fields(fields)
    return fields


def _plain_fields(fields: dict[bytes, Any]) -> dict[bytes, Any]:
    """A letter Java wrote through Redisson's Kryo codec, in the plain layout mqcore writes:
    names and text as UTF-8, numbers as their digits, the headers map as JSON. A value of a
    class not read here becomes a note saying so (the letter is still shown and counted)."""
    out: dict[bytes, Any] = {}
    for name, value in fields.items():
        try:
            key = kryo.decode(name)
        except kryo.KryoError:
            out[name] = value
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


def letter_from_entry(entry_id: Any, raw_fields: Any) -> DlqLetter:
    """A DLQ stream entry as a :class:`DlqLetter` (partition from headers first).

    ``raw_fields`` is a field mapping (bytes or str keys) or the flat list Redis
    sends. Kept lean: a page of 50 letters must decode in about the time of its
    XREVRANGE.
    """
    get = plain_fields(raw_fields).get
    headers = parse_headers(get(b"headers"))
    partition = _partition_of(headers, get(b"partitionId"))
    key = get(b"key")
    raw_payload = get(b"payload")
    if raw_payload is None:
        text, binary = "", None
    else:
        try:
            text, binary = raw_payload.decode(), None
        except UnicodeDecodeError:
            text, binary = raw_payload.decode("utf-8", "replace"), raw_payload
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
    )


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


def letters_from_entries(entries: Sequence[Any]) -> list[DlqLetter]:
    """:func:`letter_from_entry` for a page of entries as Redis sends them (the page's hot loop).

    Letters of one writer share a field layout: the positions of the wanted
    fields are worked out once per layout and read with one ``itemgetter``.
    Anything unusual (a mapping, bad UTF-8) takes :func:`letter_from_entry`.
    """
    out: list[DlqLetter] = []
    append = out.append
    layout: list[Any] | None = None
    getter: Any = None
    padded = False  # a wanted field is missing from the layout: read from [*raw, None]
    scan, make, partition_of = _SCAN_HEADERS, DlqLetter, _partition_of
    for entry_id, raw in entries:
        if raw.__class__ is not list or entry_id.__class__ is not bytes:
            append(letter_from_entry(entry_id, raw))
            continue
        names = raw[0::2]
        if names != layout:
            if any(kryo.looks_kryo(n) for n in names if n.__class__ is bytes):
                append(letter_from_entry(entry_id, raw))  # Java's Kryo layout
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
            append(
                make(
                    entry_id.decode(),
                    partition_of(headers, praw),
                    orig.decode() if orig is not None else "",
                    int(rc) if rc is not None else 0,  # not a number: the careful path
                    int(mr) if mr is not None else 3,
                    failed.decode() if failed is not None else "",
                    stamp.decode() if stamp is not None else "",
                    key.decode() if key else headers.get("key") or None,
                    payload.decode() if payload is not None else "",
                    None,
                    headers,
                    otopic.decode() if otopic is not None else "",
                )
            )
        except (ValueError, UnicodeDecodeError, AttributeError, TypeError):
            append(letter_from_entry(entry_id, raw))  # the careful path decides
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
