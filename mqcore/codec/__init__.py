"""The one codec of stream entries: ids, field maps, headers and payload text.

Every reader (consumer, admin reads, snapshot, dead letters, Spark source) and
every writer that re-encodes an entry (retries, replays) decodes through here,
so a consumer, the console and a replay see the same entry the same way.
"""

from __future__ import annotations

import json
import re
from typing import Any

from mqcore.codec.limits import (
    DEFAULT_DECODE_BUDGET_BYTES,
    DEFAULT_MAX_DECODE_BYTES,
    DecodeBudget,
    Undecoded,
)
from mqcore.errors import InvalidIdError

__all__ = [
    "DEFAULT_DECODE_BUDGET_BYTES",
    "DEFAULT_MAX_DECODE_BYTES",
    "HEADERS_MAX_BYTES",
    "HEADERS_SEND_MAX_BYTES",
    "U64",
    "DecodeBudget",
    "Undecoded",
    "decode_fields",
    "decode_text",
    "entry_bytes",
    "id_ms",
    "id_tuple",
    "parse_headers",
    "partition_count_from_meta",
    "payload_text",
    "payload_within",
    "validate_id",
]

U64 = 2**64 - 1
# headers longer than this (in bytes) read as none: a bound on the work of every reader,
# the Lua scripts' too (HEADERS_MAX_BYTES in mqcore/scripts/lib/headers.lua, the same cap)
HEADERS_MAX_BYTES = 8192
# the most a producer sends: half the cap leaves room for what a retry or a dead letter adds
# (ids, the key, an error message of up to 1000 characters)
HEADERS_SEND_MAX_BYTES = HEADERS_MAX_BYTES // 2
_ID_RE = re.compile(r"(\d{1,20})(?:-(\d{1,20}))?")
_U64 = U64
_JSON = json.JSONDecoder()
_SCAN: Any = getattr(_JSON, "scan_once")  # noqa: B009 - untyped C scanner


def validate_id(entry_id: str) -> str:
    """Return ``entry_id`` if it is a stream id ``ms-seq`` (or ``ms``), else InvalidIdError."""
    match = _ID_RE.fullmatch(entry_id) if isinstance(entry_id, str) else None
    if not match or int(match[1]) > _U64 or int(match[2] or 0) > _U64:
        raise InvalidIdError(f"invalid stream id {entry_id!r}: expected <ms>-<seq>, e.g. 1700000-0")
    return entry_id


def id_tuple(entry_id: str) -> tuple[int, int]:
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)


def id_ms(entry_id: str) -> int:
    return int(entry_id.partition("-")[0])


def decode_text(raw: Any) -> str:
    """Text of a reply value: UTF-8 (invalid bytes replaced), ``""`` for None."""
    if isinstance(raw, bytes):
        try:
            return raw.decode()
        except UnicodeDecodeError:
            return raw.decode("utf-8", "replace")
    return "" if raw is None else str(raw)


def entry_bytes(entry: Any) -> int:
    """Bytes of one raw stream entry (its id and fields, a map or a flat list) as Redis sent
    it: the one measure by which byte-bounded reads size their next ``COUNT``."""
    entry_id, fields = entry[0], entry[1] or ()
    size = len(entry_id) if isinstance(entry_id, bytes | str) else 0
    parts = (fields.keys(), fields.values()) if isinstance(fields, dict) else (fields,)
    try:  # the usual reply, bytes or text only: summed at C speed
        return size + sum([sum(map(len, part)) for part in parts])
    except TypeError:  # a value that is no string (e.g. a number) does not count
        return size + sum(len(v) for part in parts for v in part if isinstance(v, bytes | str))


def decode_fields(raw: Any) -> dict[str, bytes]:
    """Stream entry fields as ``{str: bytes}`` (field names are ASCII by contract)."""
    if isinstance(raw, dict):
        return {
            decode_text(k): v if isinstance(v, bytes) else str(v).encode() for k, v in raw.items()
        }
    return {}


def parse_headers(raw: bytes | str | None) -> dict[str, str]:
    """The ``headers`` field as text values: the one header rule of every reader and writer.

    Java writes a JSON object of strings. Values written by other producers are
    read one way everywhere (consumer, console, retries and replays): a string
    as it is; ``true``/``false`` and numbers as their JSON text (``"true"``,
    ``"3"``); ``null`` drops the header; an object or array as compact JSON text.
    Java's ``DeadLetterQueueManager`` replays write the map's ``toString()``,
    ``{k=v, k2=v2}``: that reads as those headers (a value holding ``", "`` then
    ``word=`` is split there: Java's text cannot tell). Anything else, or more than
    :data:`HEADERS_MAX_BYTES` bytes, reads as no headers.
    """
    if not raw or len(raw) > HEADERS_MAX_BYTES:
        return {}
    if isinstance(raw, str) and len(raw.encode(errors="surrogatepass")) > HEADERS_MAX_BYTES:
        return {}  # a text's characters are at most its bytes: counted in bytes, as in Lua
    try:
        text = raw.decode() if isinstance(raw, bytes) else raw
        try:  # the C scanner straight away: Java writes no surrounding whitespace
            data, end = _SCAN(text, 0)
        except StopIteration:
            data, end = None, -1
        if end != len(text):
            data = _JSON.decode(text)
    except UnicodeDecodeError:
        return {}
    except ValueError:
        return _java_map_text(text)
    if not isinstance(data, dict):
        return {}
    for v in data.values():
        if v.__class__ is not str:
            return {str(k): _header_text(v) for k, v in data.items() if v is not None}
    return data


_JAVA_MAP_KEY = re.compile(r"(?:^|, )([^=,{} ][^=,{}]*)=")


def _java_map_text(text: str) -> dict[str, str]:
    """``{k=v, k2=v2}`` (Java's ``AbstractMap.toString``) as headers; {} for anything else."""
    if len(text) < 2 or text[0] != "{" or text[-1] != "}":
        return {}
    body = text[1:-1]
    keys = list(_JAVA_MAP_KEY.finditer(body))
    if not keys or keys[0].start(1) != 0:  # a key opens the body (not ", " then a key)
        return {}
    out: dict[str, str] = {}
    for i, match in enumerate(keys):
        end = keys[i + 1].start() if i + 1 < len(keys) else len(body)
        out[match.group(1)] = body[match.end() : end]
    return out


def _header_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def payload_text(raw: bytes | None) -> tuple[str, bytes | None]:
    """(text, None) for UTF-8 payloads; (replacement-decoded text, raw bytes) otherwise."""
    if raw is None:
        return "", None
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError:
        return raw.decode("utf-8", errors="replace"), raw


def payload_within(
    raw: bytes | None, budget: DecodeBudget | None
) -> tuple[str, bytes | None, Undecoded | None]:
    """:func:`payload_text` within a page's decode limits: (text, raw bytes when not UTF-8,
    None), or ("", None, the marker) for a payload over the cap or past the page's budget,
    decided from its length before anything is decoded."""
    if raw is not None and budget is not None:
        marker = budget.admit(len(raw))
        if marker is not None:
            return "", None, marker
    text, binary = payload_text(raw)
    return text, binary, None


def partition_count_from_meta(raw: Any) -> int:
    """``partitionCount`` from the meta hash; missing or invalid means 1 (as in Java)."""
    try:
        value = int(raw)
    except (TypeError, ValueError):
        return 1
    return value if value >= 1 else 1
