"""A page of a topic's retry set, by due time, with bounded commands only.

Every read is O(log N + page): ``ZCARD`` and ``ZCOUNT`` (the counts, which also give
the rank where a state's range begins), then the first page ``ZRANGE ... BYSCORE LIMIT
0 n`` in the same pipeline, or ``ZRANK``/``ZREVRANK`` of a cursor's member (where it
stands now) and ``ZRANGE`` by rank with a bounded range; never the whole set. Each later
chunk is read after the last member read, where it stands at that instant (a script:
its rank, then ``ZRANGE`` by rank), so members leaving before it (the retry mover at
work) make a walk skip nothing. The item
hashes of one chunk are read with one pipeline of ``HGETALL`` (an item is a small hash;
a chunk is at most :data:`CHUNK`; its hashes are read :data:`FIRST_HASHES` first, then
about :data:`READ_BYTES` a round trip by the size seen). A page reads about
:data:`SCAN_BYTES` of items at most (big payloads): then it stops, not complete, and its
cursor goes on.

Order is the zset's: by due time, ties by member. ``state`` is ``all``, ``due`` (score
<= now) or ``scheduled`` (score > now). A cursor names the last member looked at and
its score; the next page starts right after that member, or, when it has left the set
(retried, deleted, moved), after every member at a lower score (ties of its score
sort by member, so those up to it are skipped). ``offset`` skips members of the range
without reading them (rank arithmetic); it is refused with a text, key or partition
filter, whose answers need the cursor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from mqcore.boundary import redis_errors
from mqcore.codec import DecodeBudget, decode_text, entry_bytes
from mqcore.config import RedisClient
from mqcore.cursor import pack_cursor, unpack_cursor
from mqcore.errors import InvalidArgumentError
from mqcore.keys import KeySpace
from mqcore.retries.items import RetryItem, RetryPage, item_from_hash, item_id_of, spend_kept
from mqcore.scripts import call_script
from mqcore.text_match import text_matches
from mqcore.wire import Wire

__all__ = [
    "CHUNK",
    "MAX_LIMIT",
    "MAX_OFFSET",
    "ORDERS",
    "STATES",
    "RetryFilter",
    "decode_cursor",
    "encode_cursor",
    "read_page",
]

STATES = ("all", "due", "scheduled")
ORDERS = ("asc", "desc")
CHUNK = 200
MAX_LIMIT = 500
MAX_OFFSET = 10_000_000
MAX_CURSOR_CHARS = 800
READ_BYTES = 1024 * 1024  # of item hashes one round trip reads, once their size is known
FIRST_HASHES = 64  # item hashes of the first round trip, before their size is known
SCAN_BYTES = 64 * 1024 * 1024  # of item hashes one page reads at most


@dataclass(frozen=True, slots=True)
class RetryFilter:
    """Which members a page shows (validated here: bad input raises before any read)."""

    state: str = "all"
    order: str = "asc"
    key: str | None = None
    text: str | None = None
    partition: int | None = None

    def __post_init__(self) -> None:
        if self.state not in STATES:
            raise InvalidArgumentError(f"state: one of {', '.join(STATES)}, not {self.state!r}")
        if self.order not in ORDERS:
            raise InvalidArgumentError(f"order: one of {', '.join(ORDERS)}, not {self.order!r}")
        if self.partition is not None and (
            isinstance(self.partition, bool) or not 0 <= self.partition < 2**31
        ):
            raise InvalidArgumentError("partition: a number >= 0")

    @property
    def narrows(self) -> bool:
        """Whether the filter looks into the items (so only a cursor pages it)."""
        return bool(self.key) or bool(self.text) or self.partition is not None

    def matches(self, item: RetryItem) -> bool:
        if self.partition is not None and item.partition != self.partition:
            return False
        if self.key and item.key != self.key:
            return False
        if self.text:
            return text_matches(item.payload, item.headers, self.text)
        return True


def encode_cursor(score: float, member: str) -> str:
    return pack_cursor([score, member])


def decode_cursor(text: str) -> tuple[float, str]:
    """The (score, member) of a cursor, or InvalidArgumentError."""
    bad = InvalidArgumentError("invalid cursor: use the next_cursor of a page")
    doc = unpack_cursor(text, max_chars=MAX_CURSOR_CHARS, bad=bad)
    if not isinstance(doc, list) or len(doc) != 2:
        raise bad
    score, member = doc
    if isinstance(score, bool) or not isinstance(score, int | float) or math.isnan(score):
        raise bad
    if not isinstance(member, str) or not member:
        raise bad
    return float(score), member


def _redis_score(score: float) -> str:
    if math.isinf(score):
        return "+inf" if score > 0 else "-inf"
    return repr(score)


class _Reader:
    """The zset reads of one page; the first ones go out in one pipeline."""

    def __init__(self, client: RedisClient, zset: str, flt: RetryFilter, now: int) -> None:
        self.client, self.zset, self.desc = client, zset, flt.order == "desc"
        self.state, self.now = flt.state, now

    def bounds(self) -> tuple[str, str]:
        """The state's score range, in the page's order (max first when descending)."""
        lo = f"({self.now}" if self.state == "scheduled" else "-inf"
        hi = str(self.now) if self.state == "due" else "+inf"
        return (hi, lo) if self.desc else (lo, hi)

    def span(self, total: int, due: int) -> tuple[int, int]:
        """Ranks (in the page's order) of the state's first member and right after its last."""
        scheduled = total - due
        if self.state == "due":
            return (scheduled, total) if self.desc else (0, due)
        if self.state == "scheduled":
            return (0, scheduled) if self.desc else (due, total)
        return 0, total

    def open(self, at: tuple[float, str] | None, first_n: int) -> tuple[int, int, Any, Any, Any]:
        """One pipeline: (total, due, the cursor's rank, the count of members before its
        score, the first rows by score). With a cursor the rows start at its score, so
        the page after it usually needs no further ZRANGE."""
        pipe = self.client.pipeline(transaction=False)
        pipe.zcard(self.zset)
        pipe.zcount(self.zset, "-inf", self.now)
        start, end = self.bounds()
        if at is not None:
            score, member = at
            (pipe.zrevrank if self.desc else pipe.zrank)(self.zset, member)
            s = _redis_score(score)
            if self.desc:
                pipe.zcount(self.zset, f"({s}", "+inf")
                start = s if _before(s, start, desc=True) else start
            else:
                pipe.zcount(self.zset, "-inf", f"({s}")
                start = s if _before(s, start, desc=False) else start
        if first_n:
            pipe.zrange(
                self.zset, start, end, desc=self.desc, withscores=True, byscore=True,
                offset=0, num=first_n + (at is not None),
            )  # fmt: skip
        replies = pipe.execute()
        total, due = int(replies[0]), int(replies[1])
        if at is None:
            return total, due, None, None, replies[2] if first_n else None
        return total, due, replies[2], replies[3], replies[4] if first_n else None

    def chunk(self, start: int, n: int) -> list[tuple[Any, float]]:
        return list(
            self.client.zrange(self.zset, start, start + n - 1, desc=self.desc, withscores=True)
        )

    def after(self, anchor: tuple[float, str], n: int) -> tuple[int, bool, int, int, list[Any]]:
        """(start rank, whether ``anchor``'s member is still there, total, due, up to ``n``
        rows after it), read at one instant (``retry_rows_after.lua``)."""
        score, member = anchor
        args = [member, _redis_score(score), n, "1" if self.desc else "0", self.now]
        start, there, total, due, flat = call_script(
            self.client, "retry_rows_after", [self.zset], args
        )
        rows = [(flat[i], float(flat[i + 1])) for i in range(0, len(flat), 2)]
        return int(start), bool(there), int(total), int(due), rows


def _before(score: str, bound: str, *, desc: bool) -> bool:
    """Whether a cursor's ``score`` lies inside the range that starts at ``bound``."""
    if bound in ("-inf", "+inf"):
        return True
    value = float(bound.lstrip("("))
    return float(score) < value if desc else float(score) > value


def _in_state(state: str, score: float, now: int) -> bool:
    return state == "all" or (score <= now) == (state == "due")


def _passed(tie: tuple[float, str] | None, score: float, member: str, desc: bool) -> bool:
    """Whether ``member`` at ``score`` was already shown before a vanished cursor member."""
    if tie is None or score != tie[0]:
        return False
    return member >= tie[1] if desc else member <= tie[1]


def read_page(
    client: RedisClient,
    keys: KeySpace,
    topic: str,
    *,
    flt: RetryFilter,
    now_ms: int,
    limit: int,
    cursor: str | None = None,
    offset: int = 0,
    max_scan: int = 5000,
    max_scan_bytes: int = SCAN_BYTES,
    budget: DecodeBudget | None = None,
) -> RetryPage:
    """One page of ``topic``'s retry items in due order (see the module's notes).
    ``budget``: the page's decode limits, spent on the items it keeps (a filter looks at
    the items it scans under the cap alone)."""
    if isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidArgumentError(f"limit must be 1..{MAX_LIMIT}")
    if isinstance(offset, bool) or not 0 <= offset <= MAX_OFFSET:
        raise InvalidArgumentError(f"offset must be 0..{MAX_OFFSET}")
    if offset and (cursor or flt.narrows):
        raise InvalidArgumentError("offset pages an unfiltered list: use the cursor instead")
    if max_scan < 1 or max_scan_bytes < 1:
        raise InvalidArgumentError("max_scan and max_scan_bytes must be >= 1")
    at = decode_cursor(cursor) if cursor else None
    zset, prefix, desc = keys.retry_zset(topic), keys.retry_item_prefix(topic), flt.order == "desc"
    reader = _Reader(client, zset, flt, now_ms)
    first_n = 0 if offset else min(CHUNK if flt.narrows else limit, max_scan)
    items: list[RetryItem] = []
    scanned, complete, inside, last, read_bytes = 0, False, False, None, 0
    tie: tuple[float, str] | None = None
    scan_budget = budget
    if budget is not None and flt.narrows:
        scan_budget = DecodeBudget.cap_only(budget.max_value_bytes)
    with redis_errors(f"read the retry set of {topic!r}"):
        total, due, rank, below, opened = reader.open(at, first_n)
        start, end = reader.span(total, due)
        rows: list[tuple[Any, float]] | None = None
        if at is None:
            start += offset
            rows = None if offset else list(opened or [])
        elif rank is not None and int(rank) + 1 >= start:  # the cursor's member is there
            start = int(rank) + 1
            rows = _after_member(opened, at[1]) or None  # else read on after it
        else:  # it left (or lies before the range): on after every lower score, skip ties
            start, tie, rows = max(start, int(below)), at, list(opened or [])
        # the last member read: the next chunk is read after it where it stands then (the
        # mover takes members meanwhile: ranks counted on would skip some)
        anchor = at
        while len(items) < limit and scanned < max_scan and not inside:
            if read_bytes >= max_scan_bytes:  # big items: the page stops, its cursor goes on
                break
            if rows is None:
                want = min(CHUNK if flt.narrows else limit - len(items), max_scan - scanned)
                if anchor is None:  # an offset's first chunk
                    want = min(want, end - start)
                    rows = reader.chunk(start, want) if want > 0 else []
                else:
                    start, there, total, due, rows = reader.after(anchor, want)
                    end = reader.span(total, due)[1]
                    tie = None if there else anchor
            if not rows:
                complete = True
                break
            start += len(rows)
            members: list[tuple[str, float]] = []
            for raw_member, score in rows:
                member = decode_text(raw_member)
                if not _in_state(flt.state, score, now_ms):  # the set changed meanwhile
                    complete = True
                    break
                if not _passed(tie, score, member, desc):
                    members.append((member, score))
                anchor = (score, member)
            rows, done = None, 0
            while done < len(members) and not inside:
                if read_bytes >= max_scan_bytes:  # big items: the page stops, its cursor goes on
                    inside = True
                    break
                n = max(1, READ_BYTES * scanned // read_bytes) if read_bytes else FIRST_HASHES
                part = members[done : done + n]
                hashes = _read_hashes(client, [m for m, _ in part])
                read_bytes += sum(entry_bytes(("", h)) for h in hashes if isinstance(h, dict))
                done += len(part)
                for i, ((member, score), raw) in enumerate(zip(part, hashes, strict=True)):
                    scanned += 1
                    last = (score, member)
                    item = item_from_hash(item_id_of(member, prefix), _ms(score), raw, scan_budget)
                    if flt.matches(item):
                        if budget is not None and scan_budget is not budget:
                            item = spend_kept(item, budget)
                        items.append(item)
                    if len(items) == limit or scanned == max_scan:
                        inside = done - len(part) + i < len(members) - 1
                        break
                if len(items) == limit or scanned == max_scan:
                    break
            if complete:
                break
    complete = complete or (start >= end and not inside)
    nxt = encode_cursor(*last) if not complete and last is not None else None
    return RetryPage(items, nxt, scanned, complete, total, due, now_ms)


def _after_member(rows: Any, member: str) -> list[tuple[Any, float]] | None:
    """The prefetched rows after the cursor's member, or None when it is not among them."""
    for i, (raw, _score) in enumerate(rows or []):
        if decode_text(raw) == member:
            return list(rows[i + 1 :])
    return None


def _ms(score: float) -> int:
    if math.isinf(score) or math.isnan(score):
        return 0 if score < 0 else 2**63 - 1
    return int(score)


def _read_hashes(client: RedisClient, members: list[str]) -> list[Any]:
    """The members' hashes (dicts) in one round trip; a member that is no hash (odd data)
    reads as an error reply. On the wire (no redis-py command objects, callbacks or parsed
    replies per hash) a hash comes as its flat field list."""
    replies = Wire(client, len(members), translate=False).run(
        [("HGETALL", member) for member in members], step=len(members)
    )
    hashes: list[Any] = []
    for reply in replies:
        if reply.__class__ is list:
            fields = iter(reply)
            reply = dict(zip(fields, fields, strict=True))
        hashes.append(reply)
    return hashes
