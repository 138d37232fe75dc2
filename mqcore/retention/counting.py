"""Bounded counts of the entries of one stream, for the retention view and its alert.

Redis cannot count the entries of an id range; these read ids in ``XRANGE`` pages of
:data:`PAGE`, a bounded number of pages per question. A group's floor splits its
stream in two (entries below it, read and acked; entries at or above it, which it
still needs): :meth:`Counter.split` reads both sides a page at a time until one ends,
so a floor near either end costs a page or two, and the stream's length gives the
other side. A rule's risk decision is taken on those exact sides, never on a capped
count.
"""

from __future__ import annotations

from dataclasses import dataclass

from mqcore.codec import decode_text, id_tuple
from mqcore.config import RedisClient

__all__ = ["COUNT_CAP", "PAGE", "SPLIT_PAGES", "Counter", "Split", "id_ms", "older"]

PAGE = 1000
COUNT_CAP = 2000  # entries counted per range (a rule's "would delete"); more reads "at least"
SPLIT_PAGES = 20  # pages per side of a floor: exact up to 20,000 entries on the shorter side
RATE_SAMPLE = 100  # newest entries read for a partition's produce rate


def older(a: str, b: str) -> bool:
    """Whether id ``a`` is below id ``b``."""
    return id_tuple(a) < id_tuple(b)


def id_ms(entry_id: str) -> int:
    """The time part of a stream id (epoch ms of its XADD)."""
    return id_tuple(entry_id)[0]


@dataclass(frozen=True)
class Split:
    """Entries below a floor and at or above it; when not ``exact``, lower bounds of each
    (the stream holds ``length``, so the other side is at most ``length`` minus one)."""

    below: int
    above: int
    exact: bool

    def above_at_most(self, length: int) -> int:
        return self.above if self.exact else max(self.above, length - self.below)


class Counter:
    """Bounded counts of entries in id ranges of one stream (answers kept per question)."""

    def __init__(self, client: RedisClient, key: str) -> None:
        self.client, self.key = client, key
        self._splits: dict[tuple[str, int], Split] = {}

    def between(self, lo: str, hi: str | None, cap: int = COUNT_CAP) -> tuple[int, bool]:
        """Entries with lo <= id < hi (hi None: to the end), up to ``cap``."""
        if hi is not None and not older(lo, hi):
            return 0, True
        counted, start = 0, lo
        end = "+" if hi is None else "(" + hi
        while counted < cap:
            want = min(PAGE, cap - counted)
            page = self.client.xrange(self.key, start, end, count=want)
            counted += len(page)
            if len(page) < want:
                return counted, True
            start = "(" + decode_text(page[-1][0])
        return counted, False

    def split(self, floor: str, length: int, pages: int | None = None) -> Split:
        """Entries below ``floor`` and at or above it in a stream of ``length`` entries, read
        ``pages`` (default :data:`SPLIT_PAGES`) pages a side at most."""
        known = self._splits.get((floor, length))
        if known is not None:
            return known
        below = above = 0
        low_start, high_start = "-", "+"
        out: Split | None = None
        for _ in range(max(1, SPLIT_PAGES if pages is None else pages)):
            page = self.client.xrange(self.key, low_start, "(" + floor, count=PAGE)
            below += len(page)
            if len(page) < PAGE:
                out = Split(below, max(0, length - below), True)
                break
            low_start = "(" + decode_text(page[-1][0])
            page = self.client.xrevrange(self.key, high_start, floor, count=PAGE)
            above += len(page)
            if len(page) < PAGE:
                out = Split(max(0, length - above), above, True)
                break
            high_start = "(" + decode_text(page[-1][0])
        if out is None:
            out = Split(below, above, False)
        self._splits[floor, length] = out
        return out

    def rate_per_ms(self, now: int) -> float | None:
        """Entries written per ms lately: the newest :data:`RATE_SAMPLE` entries over the time
        from the oldest of them to ``now``; None when fewer than two entries tell."""
        page = self.client.xrevrange(self.key, "+", "-", count=RATE_SAMPLE)
        if len(page) < 2:
            return None
        span = now - id_ms(decode_text(page[-1][0]))
        return len(page) / span if span > 0 else None
