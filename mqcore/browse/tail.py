"""The live tail of a topic: what arrived since a cursor, newest first, at a bounded rate.

A tail opens at "now": each partition's last-generated id and ``entries-added`` counter
(``XINFO STREAM``, one pipeline), with a full allowance. Each poll then sends one
pipeline round trip with, per partition, the stream's counters again and the newest
entries after the cursor's id (``XREVRANGE key + (last COUNT n``). Nothing blocks, and
``n`` is sized as every byte-bounded read is (:func:`mqcore.range_reader.next_count`
from the bytes of the newest entry: at most ``MAX_COUNT`` entries, about ``READ_BYTES``
a reply). A poll costs O(partitions) bounded commands, whatever the topic's rate.

The entries read are merged newest first across partitions (as the browser's scan:
:func:`mqcore.browse.scan.merge_key`), filtered as the browser filters
(:class:`mqcore.browse.filters.Filters`) and shown until the poll's allowance is spent:
a token bucket of ``rate`` messages a second that holds at most one second's worth
(:data:`BURST_SECONDS`), carried in the cursor. The cursor then moves to the last ids
of the poll, past everything that arrived: the entries never looked at (arrived, by the
``entries-added`` counters, minus read) are counted as ``skipped``; with a filter some of
them would not have matched. Entries looked at and not matching are neither shown nor
skipped.

The cursor is opaque text (:mod:`mqcore.cursor`): per partition the last id and the
``entries-added`` counter, the poll's time, the allowance left and the running totals
shown and skipped. A partition the topic grew since the tail opened is tailed from its
start. A cursor that is not one of ours raises InvalidArgumentError before any read.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from mqcore.admin.calls import pipeline_lenient
from mqcore.browse.scan import DEFAULT_MAX_SCAN, chosen_partitions, entry_message, merge_key
from mqcore.clock import now_ms
from mqcore.codec import decode_text, entry_bytes, id_tuple, validate_id
from mqcore.cursor import pack_cursor, unpack_cursor
from mqcore.errors import InvalidArgumentError
from mqcore.models import Message
from mqcore.range_reader import next_count

if TYPE_CHECKING:
    from mqcore.admin import Admin
    from mqcore.browse.filters import Filters

__all__ = [
    "BURST_SECONDS",
    "MAX_TAIL_RATE",
    "TAIL_RATE",
    "TailPoll",
    "TailState",
    "decode_tail_cursor",
    "encode_tail_cursor",
    "tail_topic",
]

TAIL_RATE = 50  # messages a second shown, unless asked otherwise
MAX_TAIL_RATE = 1000  # the most a tail may ask for
BURST_SECONDS = 1.0  # the allowance holds at most this many seconds of the rate
MAX_TAIL_CURSOR_CHARS = 64 * 1024
_U64 = 2**64 - 1


@dataclass(frozen=True)
class TailState:
    """What a tail cursor holds: per partition ``(last id, entries-added)``, the poll's time
    (epoch ms), the allowance left (messages) and the totals shown and skipped so far."""

    positions: dict[int, tuple[str, int]]
    at_ms: int
    allowance: float = 0.0
    shown: int = 0
    skipped: int = 0
    entry_bytes: int = 0  # of the newest entry seen: sizes the next read


@dataclass(frozen=True)
class TailPoll:
    """One poll: ``messages`` newest first, the ``cursor`` to poll with next, the entries
    looked at (``examined``), ``skipped`` (passed over unread, this poll) and the state."""

    topic: str
    partitions: list[int]
    messages: list[Message]
    cursor: str
    examined: int
    skipped: int
    rate: int
    state: TailState


def encode_tail_cursor(state: TailState) -> str:
    return pack_cursor(
        {
            "v": 1,
            "k": "tail",
            "p": {str(p): [pos, added] for p, (pos, added) in sorted(state.positions.items())},
            "t": state.at_ms,
            "a": round(state.allowance, 3),
            "n": state.shown,
            "s": state.skipped,
            "e": state.entry_bytes,
        }
    )


def _count(value: Any, bad: InvalidArgumentError) -> int:
    if value.__class__ is not int or not 0 <= value <= _U64:
        raise bad
    return int(value)


def decode_tail_cursor(text: str, partitions: list[int]) -> TailState:
    """The state in ``text`` (InvalidArgumentError when it is not a tail cursor, or was made
    for partitions other than ``partitions``)."""
    bad = InvalidArgumentError("invalid cursor: pass back the cursor of the previous poll")
    doc = unpack_cursor(text, max_chars=MAX_TAIL_CURSOR_CHARS, bad=bad)
    if not isinstance(doc, dict) or doc.get("v") != 1 or doc.get("k") != "tail":
        raise bad
    raw = doc.get("p")
    allowance = doc.get("a")
    if not isinstance(raw, dict) or not isinstance(allowance, int | float):
        raise bad
    positions: dict[int, tuple[str, int]] = {}
    for p, pos in raw.items():
        if not (isinstance(p, str) and p.isdigit() and len(p) < 10):
            raise bad
        if int(p) not in partitions:
            raise InvalidArgumentError("the cursor was made for other partitions")
        if not (isinstance(pos, list) and len(pos) == 2 and isinstance(pos[0], str)):
            raise bad
        try:
            entry_id = validate_id(pos[0])
        except InvalidArgumentError:
            raise bad from None
        positions[int(p)] = (entry_id, _count(pos[1], bad))
    return TailState(
        positions,
        _count(doc.get("t"), bad),
        max(0.0, min(float(allowance), MAX_TAIL_RATE * BURST_SECONDS)),
        _count(doc.get("n"), bad),
        _count(doc.get("s"), bad),
        _count(doc.get("e"), bad),
    )


def _counters(info: Any, held: tuple[str, int]) -> tuple[str, int, int]:
    """(last id, entries-added, bytes of the newest entry) of an ``XINFO STREAM`` reply; a
    missing stream keeps the position ``held``."""
    if not info:
        return held[0], held[1], 0
    last = info.get("last-entry")
    size = entry_bytes(last) if last and last[0] is not None else 0
    return decode_text(info.get("last-generated-id")), int(info.get("entries-added") or 0), size


def _infos(
    admin: Admin, keys: dict[int, str], held: dict[int, tuple[str, int]]
) -> dict[int, tuple[str, int, int]]:
    """Per partition (last id, entries-added, bytes of the newest entry): one pipeline."""
    infos = pipeline_lenient(admin.client, [("xinfo_stream", (keys[p],)) for p in keys])
    return {p: _counters(info, held[p]) for p, info in zip(keys, infos, strict=True)}


def tail_topic(
    admin: Admin,
    topic: str,
    *,
    cursor: str | None = None,
    partitions: list[int] | None = None,
    rate: int = TAIL_RATE,
    filters: Filters | None = None,
    max_read: int = DEFAULT_MAX_SCAN,
    hold: bool = False,
    at_ms: int | None = None,
) -> TailPoll:
    """Open a tail of ``topic`` at now (no ``cursor``: nothing shown), or poll it from
    ``cursor`` (see the module docstring); ``hold``: the cursor checked and handed back,
    no stream read (a paused tail). ``max_read``: entries a poll reads at most with a
    filter, over all partitions (an expression's CPU budget lowers it). UnknownTopicError,
    UnknownPartitionError and InvalidArgumentError before any read."""
    if rate.__class__ is not int or not 1 <= rate <= MAX_TAIL_RATE:
        raise InvalidArgumentError(f"rate must be 1..{MAX_TAIL_RATE} messages a second")
    chosen = chosen_partitions(topic, admin.partition_count(topic), partitions)
    old = decode_tail_cursor(cursor, chosen) if cursor else None
    now = now_ms() if at_ms is None else at_ms
    keys = {p: admin.keys.partition(topic, p) for p in chosen}
    if old is not None and hold:
        return TailPoll(topic, chosen, [], encode_tail_cursor(old), 0, 0, rate, old)
    held = {p: old.positions.get(p, ("0-0", 0)) if old else ("0-0", 0) for p in chosen}
    if old is None:
        opened = _infos(admin, keys, held)
        state = TailState(
            {p: (last, added) for p, (last, added, _) in opened.items()},
            now,
            rate * BURST_SECONDS,
            entry_bytes=max((size for _, _, size in opened.values()), default=0),
        )
        return TailPoll(topic, chosen, [], encode_tail_cursor(state), 0, 0, rate, state)
    elapsed = max(0, now - old.at_ms) / 1000
    allowance = min(rate * BURST_SECONDS, old.allowance + rate * elapsed)
    budget = int(allowance)
    want = 0 if budget < 1 else budget if filters is None else max(1, max_read // len(chosen))
    size = old.entry_bytes
    if want and not size:  # no entry seen yet: their size first (one more round trip)
        size = max((n for _, _, n in _infos(admin, keys, held).values()), default=0)
    count = min(want, next_count(1, size))
    calls: list[tuple[str, tuple[Any, ...]]] = []
    for p in chosen:
        calls.append(("xinfo_stream", (keys[p],)))
        if count:
            calls.append(("xrevrange", (keys[p], "+", "(" + held[p][0], count)))
    replies = pipeline_lenient(admin.client, calls)
    step = 2 if count else 1
    now_at: dict[int, tuple[str, int, int]] = {}
    merged: list[tuple[tuple[int, int, int], str, int, Any]] = []
    for i, p in enumerate(chosen):
        now_at[p] = _counters(replies[i * step], held[p])
        top_ms, top_seq = id_tuple(now_at[p][0])
        newest = (-top_ms, -top_seq, -p)  # merge keys from here on: ids up to ``last``
        for raw_id, fields in (replies[i * step + 1] or []) if count else ():
            entry_id = decode_text(raw_id)
            key = merge_key(entry_id, p, -1)
            if key >= newest:  # else added after the counters: the next poll's
                merged.append((key, entry_id, p, fields))
    merged.sort(key=itemgetter(0))  # runs already in order: a merge at C speed
    messages: list[Message] = []
    examined = dict.fromkeys(chosen, 0)
    budget_of = admin.config.decode_budget()
    cap = budget_of.max_value_bytes
    for _key, entry_id, p, fields in merged:
        if len(messages) >= budget:
            break
        examined[p] += 1
        if filters is None or filters.matches((entry_id, p, fields), cap):
            messages.append(entry_message(topic, p, entry_id, fields, budget_of))
    skipped = sum(
        max(0, now_at[p][1] - held[p][1] - examined[p])
        for p in chosen
        if now_at[p][1] >= held[p][1]
    )
    state = TailState(
        {p: (last, added) for p, (last, added, _) in now_at.items()},
        now,
        allowance - len(messages),
        old.shown + len(messages),
        old.skipped + skipped,
        max((size for _, _, size in now_at.values()), default=0) or old.entry_bytes,
    )
    cursor_out = encode_tail_cursor(state)
    return TailPoll(
        topic, chosen, messages, cursor_out, sum(examined.values()), skipped, rate, state
    )
