"""Consumer metrics in Redis: per group, consumer and minute, what the handler did.

:mod:`mqcore.metrics` counts in-process, per partition, for the application's own
Prometheus export; the console cannot see it. This module is the shared record: each
mqcore consumer adds, per group, consumer and minute, how many messages its handler
processed, how many failed (raised, or returned RETRY or FAIL), how many were retried and
dead-lettered, the handler time (total, in microseconds) and a histogram of it over
:data:`BUCKETS_MS`. The console reads it back (:func:`read_window`).

Layout (``KeySpace.consumer_metrics``, docs/redis-layout.md): one hash per group and minute
(``...:m:<unix minute>``, kept :data:`MINUTE_TTL_S`) and one per group and hour
(``...:h:<unix hour>``, kept :data:`HOUR_TTL_S`, so 7 days can be shown), as Sidekiq 7
keeps its metrics. Field ``<consumer>|<counter>``: counters ``p`` (processed), ``f``
(failed), ``r`` (retried), ``d`` (dead-lettered), ``us`` (handler time) and ``b0`` ..
``b16`` (histogram buckets: ``b<i>`` counts handler times <= ``BUCKETS_MS[i]``, exclusive
of the bucket below; ``b16`` those over 10 s). Only counters that moved are written.

Writing: each partition worker counts in memory (:class:`Tally`, no lock: one thread) and
queues the HINCRBYs and EXPIREs (:meth:`Tally.queue`) on the pipeline that already carries
its acks and its next read, at most once every :data:`FLUSH_S` seconds: no extra round
trip. Retries and dead letters settle through their own scripts; their counts ride the
next such pipeline. A stopping worker sends what is left with its last ack, or alone as
it exits (also when fenced or failed: the handler did run). When the process dies (killed,
crashed) the counts not yet sent are lost (at most :data:`FLUSH_S` seconds and one batch
of a worker's work); a pipeline that fails on the connection is not resent (its counts
may or may not have landed), so nothing is counted twice. Counts go to the minute in
which the tally began (off by one flush interval, or one batch's handling time).

Memory: a consumer adds at most 4 + 1 + 17 = 22 fields (about 1.1 KB with a 40-character
name, typically 6-8 fields) to each minute hash it is active in (480 kept) and each hour
hash (192 kept): at most about 1 MB per always-busy consumer, typically 300 KB.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mqcore.boundary import redis_errors
from mqcore.codec import decode_text
from mqcore.keys import KeySpace

__all__ = [
    "BUCKETS_MS",
    "COUNTERS",
    "FLUSH_S",
    "HOUR_TTL_S",
    "MINUTE_TTL_S",
    "ConsumerWindow",
    "Tally",
    "read_hour",
    "read_window",
    "window_plan",
]

# handler-time histogram bounds, ms (log-spaced as Prometheus' defaults, 0.1 ms to 10 s);
# one more bucket counts what is over the last bound
BUCKETS_MS = (
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    25.0,
    50.0,
    100.0,
    250.0,
    500.0,
    1e3,
    2.5e3,
    5e3,
    1e4,
)
COUNTERS = {"p": "processed", "f": "failed", "r": "retried", "d": "dead"}
FLUSH_S = 1.0
MINUTE_TTL_S = 8 * 3600  # the 1 h and 6 h windows read minutes
HOUR_TTL_S = 8 * 86400  # the 24 h and 7 d windows read hours
READ_CHUNK = 120  # hashes per pipelined read
WHOLE_FIELDS = 2000  # a hash up to this many fields (90 busy consumers) is read at once
SCAN_COUNT = 1000  # else by HSCAN pages of about this many
_NB = len(BUCKETS_MS) + 1
_bucket = bisect.bisect_left  # the bucket of a time: the first bound not below it


class Tally:
    """One worker's counts since its last flush (one thread: no lock; plain attributes,
    as :meth:`handled` runs once a message)."""

    __slots__ = (
        "buckets",
        "dead",
        "failed",
        "minute",
        "processed",
        "retried",
        "sent_at",
        "total_ms",
    )

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self.processed = self.failed = self.retried = self.dead = 0
        self.buckets = [0] * _NB
        self.total_ms = 0.0
        self.minute = 0  # the unix minute the counts began in (0: not stamped yet)
        self.sent_at = time.monotonic()

    @property
    def counts(self) -> dict[str, int]:
        """The counters by field suffix (:data:`COUNTERS`)."""
        return {"p": self.processed, "f": self.failed, "r": self.retried, "d": self.dead}

    def handled(self, elapsed_ms: float, failed: bool) -> None:
        """One handler call that took ``elapsed_ms``; ``failed``: raised, RETRY or FAIL."""
        self.processed += 1
        if failed:
            self.failed += 1
        self.buckets[_bucket(BUCKETS_MS, elapsed_ms)] += 1
        self.total_ms += elapsed_ms

    def settled(self, counter: str) -> None:
        """One retry (``r``) or dead letter (``d``) written."""
        if counter == "r":
            self.retried += 1
        else:
            self.dead += 1

    def due(self, *, force: bool = False) -> bool:
        """Whether counts wait and :data:`FLUSH_S` has passed since the last flush (asked
        after each batch: the first time counts wait, their minute is stamped)."""
        if not (self.processed or self.retried or self.dead):
            return False
        if not self.minute:
            self.minute = int(time.time()) // 60
        return force or time.monotonic() - self.sent_at >= FLUSH_S

    def queue(self, pipe: Any, keys: KeySpace, topic: str, group: str, consumer: str) -> int:
        """Queue the counts on ``pipe`` (HINCRBY into the minute and hour hashes, their
        EXPIRE) and start again from zero; how many commands were queued."""
        fields = [(f"{consumer}|{c}", n) for c, n in self.counts.items() if n]
        fields += [(f"{consumer}|b{i}", n) for i, n in enumerate(self.buckets) if n]
        if self.total_ms:
            fields.append((f"{consumer}|us", round(self.total_ms * 1000)))
        minute = self.minute or int(time.time()) // 60
        minute_key = keys.consumer_metrics(topic, group, "m", minute)
        hour_key = keys.consumer_metrics(topic, group, "h", minute // 60)
        for key, ttl in ((minute_key, MINUTE_TTL_S), (hour_key, HOUR_TTL_S)):
            for name, amount in fields:
                pipe.hincrby(key, name, amount)
            pipe.expire(key, ttl)
        self._reset()
        return 2 * len(fields) + 2


# --- reading ----------------------------------------------------------------------------
# window -> (slots, step, seconds a slot)
WINDOWS = {
    "1h": (60, "m", 60),
    "6h": (360, "m", 60),
    "24h": (24, "h", 3600),
    "7d": (168, "h", 3600),
}


def window_plan(window: str, now_s: float) -> tuple[str, list[int], int]:
    """``(step, slots, seconds per slot)`` of ``window`` (one of :data:`WINDOWS`) ending now:
    minutes for 1 h and 6 h, hours for 24 h and 7 d (at most 360 hashes a group)."""
    if window not in WINDOWS:
        raise ValueError(f"window {window!r}: one of {', '.join(WINDOWS)}")
    count, step, seconds = WINDOWS[window]
    last = int(now_s) // seconds
    return step, list(range(last - count + 1, last + 1)), seconds


@dataclass
class ConsumerWindow:
    """One consumer's sums over a window, and its per-slot series."""

    name: str
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTERS.values(), 0))
    buckets: list[int] = field(default_factory=lambda: [0] * _NB)
    total_us: int = 0
    series: dict[int, dict[str, int]] = field(default_factory=dict)  # slot -> p, f

    def percentile(self, q: float) -> float | None:
        """The ``q`` quantile of handler time, ms, from the summed buckets (linear within a
        bucket, as Prometheus' histogram_quantile; over the last bound: that bound)."""
        total = sum(self.buckets)
        if not total:
            return None
        rank = q * total
        seen = 0
        for i, n in enumerate(self.buckets):
            if n and seen + n >= rank:
                if i >= len(BUCKETS_MS):
                    return float(BUCKETS_MS[-1])
                low = BUCKETS_MS[i - 1] if i else 0.0
                return low + (BUCKETS_MS[i] - low) * (rank - seen) / n
            seen += n
        return float(BUCKETS_MS[-1])

    def add(self, slot: int, counter: str, amount: int) -> None:
        if counter in COUNTERS:
            self.counts[COUNTERS[counter]] += amount
            if counter in ("p", "f"):
                point = self.series.setdefault(slot, {"p": 0, "f": 0})
                point[counter] += amount
        elif counter == "us":
            self.total_us += amount
        elif counter[:1] == "b" and counter[1:].isdigit() and int(counter[1:]) < _NB:
            self.buckets[int(counter[1:])] += amount


def read_window(
    client: Any, keys: KeySpace, topic: str, group: str, slots: Sequence[int], step: str
) -> dict[str, ConsumerWindow]:
    """Every consumer's sums over the hashes of ``slots`` (each holds at most 22 fields a
    consumer), read in pipelined chunks (:func:`_hashes`)."""
    found: dict[str, ConsumerWindow] = {}
    names = [keys.consumer_metrics(topic, group, step, slot) for slot in slots]
    for slot, reply in zip(slots, _hashes(client, names), strict=True):
        _add_hash(found, slot, reply)
    return found


def read_hour(
    client: Any, keys: KeySpace, groups: Sequence[tuple[str, str]], now_s: float
) -> dict[tuple[str, str], dict[str, ConsumerWindow]]:
    """Every consumer's counts so far in the current hour, for each ``(topic, group)``: one
    small hash a group (Prometheus reads them as counters that restart every hour)."""
    hour = int(now_s) // 3600
    names = [keys.consumer_metrics(topic, group, "h", hour) for topic, group in groups]
    out: dict[tuple[str, str], dict[str, ConsumerWindow]] = {}
    for pair, reply in zip(groups, _hashes(client, names), strict=True):
        _add_hash(out.setdefault(pair, {}), hour, reply)
    return out


def _hashes(client: Any, names: Sequence[str]) -> list[Mapping[Any, Any]]:
    """Each hash of ``names``, :data:`READ_CHUNK` at a time: their HLEN pipelined, then
    HGETALL pipelined for those of at most :data:`WHOLE_FIELDS` fields, HSCAN pages of
    :data:`SCAN_COUNT` for bigger ones (a group of hundreds of consumers), so no command
    reads a big hash at once."""
    replies: list[Mapping[Any, Any]] = []
    for start in range(0, len(names), READ_CHUNK):
        chunk = names[start : start + READ_CHUNK]
        with redis_errors("consumer metrics"):
            pipe = client.pipeline(transaction=False)
            for name in chunk:
                pipe.hlen(name)
            sizes = pipe.execute()
            pipe = client.pipeline(transaction=False)
            small = [name for name, size in zip(chunk, sizes, strict=True) if size <= WHOLE_FIELDS]
            for name in small:
                pipe.hgetall(name)
            found = dict(zip(small, pipe.execute(), strict=True))
            for name, size in zip(chunk, sizes, strict=True):
                if size > WHOLE_FIELDS:
                    found[name] = dict(client.hscan_iter(name, count=SCAN_COUNT))
        replies.extend(found.get(name) or {} for name in chunk)
    return replies


def _add_hash(found: dict[str, ConsumerWindow], slot: int, reply: Mapping[Any, Any]) -> None:
    for raw_name, raw_value in reply.items():
        name, sep, counter = decode_text(raw_name).rpartition("|")
        if not sep or not name:
            continue
        try:
            amount = int(raw_value)
        except (TypeError, ValueError):
            continue
        window = found.get(name)
        if window is None:
            window = found[name] = ConsumerWindow(name)
        window.add(slot, counter, amount)
