"""Browse a topic: its partitions merged by id, newest or oldest first, filtered, paged.

Each partition is read with ``XRANGE``/``XREVRANGE`` pages (one pipeline round trip
refills every partition whose buffer ran dry). A read is sized as every byte-bounded
read is (:mod:`mqcore.range_reader`: at most :data:`MAX_COUNT` entries, one reply near
:data:`READ_BYTES`, so a command over big payloads stays well under 5 ms). Entries are
merged across partitions by id (equal ids by partition: newest first is exactly the
reverse of oldest first); every merged entry counts as scanned, and the scan stops at
``max_scan`` entries or after reading about ``max_scan_bytes`` (:data:`SCAN_BYTES`: big
payloads), saying so (``stopped_at_bound``), with a cursor to go on.

The cursor encodes each partition's position (the last entry consumed from it,
exclusive next time) and the partitions that reached their end; it is opaque
text (base64 of a small JSON document) handed back with the same query.
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mqcore.admin.shapes import message_of
from mqcore.boundary import redis_errors
from mqcore.codec import U64, decode_fields, parse_headers, validate_id
from mqcore.cursor import pack_cursor, unpack_cursor
from mqcore.errors import InvalidArgumentError, UnknownPartitionError
from mqcore.models import Message
from mqcore.range_reader import MAX_COUNT, READ_BYTES, SCAN_BYTES, next_count, sample_bytes

if TYPE_CHECKING:
    from mqcore.admin import Admin
    from mqcore.browse.filters import Filters
    from mqcore.codec import DecodeBudget

__all__ = [
    "DEFAULT_MAX_SCAN",
    "MAX_COUNT",
    "MAX_LIMIT",
    "MAX_SCAN",
    "READ_BYTES",
    "BrowsePage",
    "BrowseQuery",
    "browse_topic",
    "chosen_partitions",
    "decode_cursor",
    "encode_cursor",
    "entry_message",
    "merge_key",
]

MAX_LIMIT = 500  # messages per page
DEFAULT_MAX_SCAN = 10_000  # entries scanned per request unless asked otherwise
MAX_SCAN = 100_000  # the most a request may scan
ORDERS = ("newest", "oldest")
MAX_CURSOR_CHARS = 64 * 1024  # a cursor of this many partitions


@dataclass(frozen=True)
class BrowseQuery:
    """What to browse: ``partitions`` (None: all), ``order``, a start (``from_id`` or
    ``from_ms``, inclusive; none: the newest or oldest end), the page size, the bound."""

    partitions: list[int] | None = None
    order: str = "newest"
    from_id: str | None = None
    from_ms: int | None = None
    limit: int = 50
    max_scan: int = DEFAULT_MAX_SCAN
    cursor: str | None = None
    max_scan_bytes: int = SCAN_BYTES

    def check(self) -> None:
        if self.order not in ORDERS:
            raise InvalidArgumentError(f"order must be 'newest' or 'oldest', not {self.order!r}")
        if not isinstance(self.limit, int) or not 1 <= self.limit <= MAX_LIMIT:
            raise InvalidArgumentError(f"limit must be 1..{MAX_LIMIT}")
        if not isinstance(self.max_scan, int) or not 1 <= self.max_scan <= MAX_SCAN:
            raise InvalidArgumentError(f"max_scan must be 1..{MAX_SCAN}")
        if not isinstance(self.max_scan_bytes, int) or self.max_scan_bytes < 1:
            raise InvalidArgumentError("max_scan_bytes must be >= 1")
        if self.from_id is not None and self.from_ms is not None:
            raise InvalidArgumentError("start from an id or from a time, not both")
        if self.from_id is not None:
            validate_id(self.from_id)
        if self.from_ms is not None and (not isinstance(self.from_ms, int) or self.from_ms < 0):
            raise InvalidArgumentError("the start time is epoch milliseconds >= 0")


@dataclass(frozen=True)
class BrowsePage:
    """One page: ``messages`` in order, ``next_cursor`` (None: every partition reached its
    end), ``scanned`` entries looked at, ``stopped_at_bound`` when ``max_scan`` ended it."""

    topic: str
    order: str
    partitions: list[int]
    messages: list[Message]
    next_cursor: str | None
    scanned: int
    max_scan: int
    stopped_at_bound: bool
    positions: dict[int, str | None] = field(default_factory=dict)  # None: at its end
    partition_count: int = 0  # of the topic


def encode_cursor(order: str, positions: dict[int, str | None]) -> str:
    doc = {"v": 1, "o": order, "p": {str(p): pos for p, pos in sorted(positions.items())}}
    return pack_cursor(doc)


def decode_cursor(text: str, order: str, partitions: list[int]) -> dict[int, str | None]:
    """Per-partition positions of ``cursor`` (InvalidArgumentError when it is not one of
    ours, or was made for another order or other partitions)."""
    bad = InvalidArgumentError("invalid cursor: pass back the next_cursor of the same query")
    doc = unpack_cursor(text, max_chars=MAX_CURSOR_CHARS, bad=bad)
    if not isinstance(doc, dict) or doc.get("v") != 1 or not isinstance(doc.get("p"), dict):
        raise bad
    if doc.get("o") != order:
        raise InvalidArgumentError("the cursor was made for the other order")
    out: dict[int, str | None] = {}
    for p, pos in doc["p"].items():
        if not (isinstance(p, str) and p.isdigit()) or int(p) not in partitions:
            raise InvalidArgumentError("the cursor was made for other partitions")
        if pos is not None:
            if not isinstance(pos, str):
                raise bad
            validate_id(pos)
        out[int(p)] = pos
    return out


@dataclass
class _Part:
    partition: int
    key: str
    bound: str  # the next read starts here (inclusive, or "(" + id exclusive)
    buffer: deque[tuple[tuple[int, int, int], str, Any]] = field(default_factory=deque)
    last_read: bool = False  # the previous read reached the partition's end
    consumed: str | None = None  # last entry id merged from this partition
    reads: int = 0
    read_entries: int = 0
    read_bytes: int = 0

    @property
    def done(self) -> bool:
        return self.last_read and not self.buffer

    def count(self) -> int:
        return next_count(self.read_entries, self.read_bytes)


def chosen_partitions(topic: str, count: int, partitions: list[int] | None) -> list[int]:
    """The partitions asked for (None: all ``count``), sorted; UnknownPartitionError for one
    the topic does not have."""
    if partitions is None:
        return list(range(count))
    chosen = sorted(set(partitions))
    for p in chosen:
        if not isinstance(p, int) or not 0 <= p < count:
            raise UnknownPartitionError(f"topic {topic!r} has partitions 0..{count - 1}, not {p!r}")
    return chosen


def merge_key(entry_id: str, partition: int, sign: int) -> tuple[int, int, int]:
    """The key that orders entries of several partitions: ids, then partitions; ``sign``
    -1 for newest first (the smallest key is always next)."""
    ms, _, seq = entry_id.partition("-")
    return sign * int(ms), sign * int(seq or 0), sign * partition


def entry_message(
    topic: str, partition: int, entry_id: str, raw: Any, budget: DecodeBudget
) -> Message:
    """One raw entry as the browser shows it (no raw fields; a payload over ``budget``
    kept undecoded): the browser's pages and the live tail."""
    fields = decode_fields(raw)
    headers = parse_headers(fields.get("headers"))
    payload = fields.get("payload")
    return message_of(
        topic, partition, entry_id, fields, headers, payload, with_fields=False, budget=budget
    )


def _start_bound(query: BrowseQuery) -> str:
    newest = query.order == "newest"
    if query.from_id is not None:
        return query.from_id
    if query.from_ms is not None:
        return f"{query.from_ms}-{U64}" if newest else f"{query.from_ms}-0"
    return "+" if newest else "-"


def _refill(admin: Admin, topic: str, parts: list[_Part], newest: bool) -> None:
    """One round trip: the next read of every partition of ``parts`` whose buffer ran dry.

    Buffered entries are ``(sort key, id, fields)``; the sort key orders the merge (ids,
    then partitions; negated newest first, so the smallest key is always next)."""
    todo = [p for p in parts if not p.buffer and not p.last_read]
    if not todo:
        return
    with redis_errors(f"browse {topic}"):
        pipe = admin.client.pipeline(transaction=False)
        counts = []
        for part in todo:
            count = part.count()
            counts.append(count)
            if newest:
                pipe.xrevrange(part.key, part.bound, "-", count)
            else:
                pipe.xrange(part.key, part.bound, "+", count)
        replies = pipe.execute()
    sign = -1 if newest else 1
    for part, count, entries in zip(todo, counts, replies, strict=True):
        entries = entries or []
        part.reads += 1
        if entries:
            part.read_entries += len(entries)
            part.read_bytes += sample_bytes(entries)
        for raw_id, fields in entries:
            entry_id = raw_id.decode() if raw_id.__class__ is bytes else str(raw_id)
            part.buffer.append((merge_key(entry_id, part.partition, sign), entry_id, fields))
        if len(entries) < count:
            part.last_read = True
        if entries:
            part.bound = "(" + part.buffer[-1][1]


def browse_topic(
    admin: Admin, topic: str, query: BrowseQuery, filters: Filters | None = None
) -> BrowsePage:
    """One page of ``topic`` (see the module docstring); UnknownTopicError,
    UnknownPartitionError and InvalidArgumentError on bad input (nothing is read)."""
    query.check()
    count = admin.partition_count(topic)
    chosen = chosen_partitions(topic, count, query.partitions)
    newest = query.order == "newest"
    positions = decode_cursor(query.cursor, query.order, chosen) if query.cursor else {}
    start = _start_bound(query)
    parts: list[_Part] = []
    for p in chosen:
        part = _Part(p, admin.keys.partition(topic, p), start)
        if p in positions:
            pos = positions[p]
            if pos is None:
                part.last_read = True
            else:
                part.bound, part.consumed = "(" + pos, pos
        parts.append(part)
    messages: list[Message] = []
    scanned = 0
    heads: list[tuple[tuple[int, int, int], int]] = []
    dry = list(range(len(parts)))  # partitions to read before the next pick
    read_bytes = 0
    budget = admin.config.decode_budget()
    cap = budget.max_value_bytes
    while len(messages) < query.limit and scanned < query.max_scan:
        if dry:  # one round trip for every partition that ran dry (read lazily)
            if read_bytes >= query.max_scan_bytes:  # big payloads: stop here, the cursor goes on
                break
            _refill(admin, topic, [parts[i] for i in dry], newest)
            read_bytes = sum(part.read_bytes for part in parts)
            for i in dry:
                if parts[i].buffer:
                    heapq.heappush(heads, (parts[i].buffer[0][0], i))
            dry = []
        if not heads:
            break
        _key, i = heapq.heappop(heads)
        head = parts[i]
        _key, entry_id, raw = head.buffer.popleft()
        head.consumed = entry_id
        scanned += 1
        if head.buffer:
            heapq.heappush(heads, (head.buffer[0][0], i))
        elif not head.last_read:
            dry.append(i)
        if filters is None or filters.matches((entry_id, head.partition, raw), cap):
            messages.append(entry_message(topic, head.partition, entry_id, raw, budget))
    out_positions: dict[int, str | None] = {}
    for part in parts:
        if part.done:
            out_positions[part.partition] = None
        elif part.consumed is not None:
            out_positions[part.partition] = part.consumed
    finished = all(part.done for part in parts)
    if not finished and all(part.done or not part.buffer for part in parts):
        _refill(admin, topic, parts, newest)  # the dry partitions may have ended exactly here
        finished = all(part.done for part in parts)
        for part in parts:
            if part.done:
                out_positions[part.partition] = None
    return BrowsePage(
        topic=topic,
        order=query.order,
        partitions=chosen,
        messages=messages,
        next_cursor=None if finished else encode_cursor(query.order, out_positions),
        scanned=scanned,
        max_scan=query.max_scan,
        stopped_at_bound=(scanned >= query.max_scan or read_bytes >= query.max_scan_bytes)
        and not finished,
        positions=out_positions,
        partition_count=count,
    )
