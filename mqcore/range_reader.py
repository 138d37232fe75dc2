"""Byte-bounded reads of one stream: the one way a reader sizes its next ``COUNT``.

``XRANGE`` (or ``XREVRANGE``) pages of one stream, the first asking for a few entries
(:data:`PROBE_COUNT` unless told), each next one sized from the bytes per entry seen so
far: at most :data:`MAX_COUNT` entries, about :data:`READ_BYTES` a reply and never much
past what is left of ``max_bytes`` (a command over big payloads stays well under 5 ms;
a reader over big payloads stops after about ``max_bytes``). The message browser's
partitions, its trace's readers and the hot-keys sample read this way.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mqcore.boundary import redis_errors
from mqcore.codec import decode_text, entry_bytes

__all__ = [
    "MAX_COUNT",
    "PROBE_COUNT",
    "READ_BYTES",
    "SCAN_BYTES",
    "RangeReader",
    "next_count",
    "sample_bytes",
]

MAX_COUNT = 250  # entries per XRANGE read
PROBE_COUNT = 8  # entries of a stream's first read, before its entry size is known
READ_BYTES = 128 * 1024  # target size of one read's reply
SCAN_BYTES = 64 * 1024 * 1024  # of entries one reader (one page) reads, about


def sample_bytes(entries: list[Any]) -> int:
    """Bytes of a reply, from at most 8 entries spread over it (a read sizes the next one)."""
    step = max(1, len(entries) // 8)
    sample = entries[::step]
    return sum(entry_bytes(e) for e in sample) * len(entries) // len(sample)


def next_count(read_entries: int, read_bytes: int, left_bytes: int | None = None) -> int:
    """The ``COUNT`` of the next read after ``read_entries`` entries of ``read_bytes``:
    :data:`PROBE_COUNT` first, then about :data:`READ_BYTES` (and at most ``left_bytes``)
    of entries of the size seen, 1..:data:`MAX_COUNT`."""
    if not read_entries or not read_bytes:
        return PROBE_COUNT
    per_entry = max(1, read_bytes // read_entries)
    budget = READ_BYTES if left_bytes is None else min(READ_BYTES, left_bytes)
    return max(1, min(MAX_COUNT, budget // per_entry))


class RangeReader:
    """Pages of the stream ``key`` from ``start`` (inclusive; ``(id`` exclusive), oldest
    first, or newest first with ``reverse``, until its end, ``max_entries`` or about
    ``max_bytes`` read. After iterating: ``scanned`` entries were read (about
    ``bytes_read`` bytes), ``ended`` whether the stream's end was reached."""

    def __init__(
        self,
        client: Any,
        key: str,
        start: str,
        max_entries: int,
        what: str,
        *,
        max_bytes: int = SCAN_BYTES,
        reverse: bool = False,
        first: int = PROBE_COUNT,
    ) -> None:
        self.client, self.key, self.bound, self.what = client, key, start, what
        self.max_entries, self.max_bytes, self.reverse, self.first = (
            max_entries, max_bytes, reverse, first,
        )  # fmt: skip
        self.scanned, self.ended, self.bytes_read = 0, False, 0

    def __iter__(self) -> Iterator[list[Any]]:
        while self.scanned < self.max_entries and self.bytes_read < self.max_bytes:
            count = (
                next_count(self.scanned, self.bytes_read, self.max_bytes - self.bytes_read)
                if self.bytes_read
                else self.first
            )
            count = max(1, min(count, self.max_entries - self.scanned))
            with redis_errors(self.what):
                if self.reverse:
                    entries = self.client.xrevrange(self.key, self.bound, "-", count) or []
                else:
                    entries = self.client.xrange(self.key, self.bound, "+", count) or []
            self.scanned += len(entries)
            if entries:
                self.bytes_read += sample_bytes(entries)
                yield entries
            if len(entries) < count:
                self.ended = True
                return
            self.bound = "(" + decode_text(entries[-1][0])
