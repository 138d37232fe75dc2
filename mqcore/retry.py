"""Retry policy (exponential backoff with jitter) and the retry mover.

The consume side acks a failed message and schedules it in the topic's retry
zset (member = retry item key, score = due ms) in one script. The mover puts
due items back on their partition: ``timestamp`` = now, the other entry fields
copied (``retryCount`` already incremented, ``originalMessageId`` kept), then
ZREM + DEL; an item with an empty topic is dropped (Java semantics).

Moving is two steps: a read of the due items (ZRANGEBYSCORE, bounded by
``batch``, plus HMGET of their topic/partition to name the target streams, as
every script key must come through KEYS), then one Lua call that re-checks each
item is still in the zset and due before moving it. So any number of movers
can run at once, and a call retried after a timeout, without re-adding an
item twice. No lock is needed; the Java lock key
``retry:lock:{t}`` is left alone (Java keeps a Redisson lock hash there).
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mqcore import clock
from mqcore.boundary import redis_errors
from mqcore.clock import iso_now
from mqcore.codec import decode_text, partition_count_from_meta
from mqcore.config import MQConfig, RedisClient
from mqcore.errors import ConnectionLostError, InvalidArgumentError, MQError
from mqcore.payloads import owned_prefix
from mqcore.scripts import call_script
from mqcore.topics import set_members

__all__ = ["DIRECT_READD_MS", "MoveStats", "RetryMover", "RetryPolicy"]

log = logging.getLogger(__name__)

DIRECT_READD_MS = 50  # Java re-adds a retry at once instead of scheduling when delay <= this
_MAX_ROUNDS = 10  # batches per topic per move_all pass


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how late a failed message is retried (Java's ExponentialBackoffRetryPolicy).

    A message with ``max_retries = N`` is handled N + 1 times, then dead-lettered
    with ``retryCount = N``.
    """

    max_retries: int = 3
    base_ms: int = 1000
    max_ms: int = 60000
    jitter: float = 0.1

    def __post_init__(self) -> None:
        for name in ("max_retries", "base_ms", "max_ms"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidArgumentError(f"{name} must be a non-negative integer, got {value!r}")
        if self.max_ms < self.base_ms:
            raise InvalidArgumentError(f"max_ms ({self.max_ms}) is below base_ms ({self.base_ms})")
        if not 0.0 <= self.jitter <= 1.0:
            raise InvalidArgumentError(f"jitter must be within 0..1, got {self.jitter!r}")

    def delay_ms(self, retry_count: int, rng: random.Random | None = None) -> int:
        """Delay before attempt ``retry_count`` (the new retryCount, >= 1).

        ``base * 2^(n-1)`` capped at ``max_ms``, then spread by +/- ``jitter``
        (never above ``max_ms``, never negative).
        """
        if retry_count < 1:
            raise InvalidArgumentError(f"retry_count must be >= 1, got {retry_count}")
        exponent = min(retry_count - 1, 62)
        delay = min(self.max_ms, self.base_ms * (1 << exponent))
        if self.jitter:
            spread = delay * self.jitter * ((rng or random).uniform(-1.0, 1.0))
            delay = round(delay + spread)
        return max(0, min(self.max_ms, delay))

    def should_dead_letter(self, retry_count: int) -> bool:
        """True when a message that already has ``retry_count`` retries must go to the DLQ."""
        return retry_count >= self.max_retries


@dataclass(frozen=True, slots=True)
class MoveStats:
    moved: int
    dropped: int
    skipped: int  # items left in place (unreadable, or another topic's slot on a cluster)


class RetryMover:
    """Moves due retry items back to their partitions (safe to run many at once)."""

    def __init__(
        self, config: MQConfig, client: RedisClient | None = None, *, batch: int = 100
    ) -> None:
        if isinstance(batch, bool) or not isinstance(batch, int) or not 1 <= batch <= 1000:
            raise InvalidArgumentError(f"batch must be 1..1000, got {batch!r}")
        self.config = config
        self.keys = config.keys
        self.client = client if client is not None else config.client()
        self.batch = batch
        self.last: MoveStats = MoveStats(0, 0, 0)

    def move_due(self, topic: str, *, now_ms: int | None = None) -> int:
        """Move up to ``batch`` due items of ``topic``; returns how many were re-added."""
        stats = self.move_due_stats(topic, now_ms=now_ms)
        return stats.moved

    def move_due_stats(self, topic: str, *, now_ms: int | None = None) -> MoveStats:
        now = clock.now_ms() if now_ms is None else int(now_ms)
        with redis_errors(f"move retries of {topic!r}"):
            items = self.client.zrangebyscore(
                self.keys.retry_zset(topic), "-inf", now, start=0, num=self.batch
            )
        self.last = self.move_items(topic, items, now_ms=now)
        return self.last

    def move_items(
        self, topic: str, items: Sequence[Any], *, now_ms: int | None = None, force: bool = False
    ) -> MoveStats:
        """Move the retry items ``items`` (member keys of ``topic``'s retry zset, at most
        ``batch``) back to their partitions in one script call: those still in the zset
        and due at ``now_ms``, or, with ``force`` (an operator's "retry now"), whatever
        their due time. Items no longer in the zset are left alone (counted nowhere)."""
        if not items:
            return MoveStats(0, 0, 0)
        if len(items) > self.batch:
            raise InvalidArgumentError(f"at most {self.batch} retry items per call")
        now = clock.now_ms() if now_ms is None else int(now_ms)
        ks = self.keys
        zset = ks.retry_zset(topic)
        with redis_errors(f"move retries of {topic!r}"):
            pipe = self.client.pipeline(transaction=False)
            pipe.hget(ks.meta(topic), "partitionCount")
            for item in items:
                pipe.hmget(item, "topic", "partitionId")
            replies = pipe.execute()
            count = partition_count_from_meta(replies[0])
            keys: list[Any] = [zset]
            args: list[Any] = ["+inf" if force else now, iso_now()]
            skipped = 0
            prefixes: list[str] = []  # the payload key prefix of each item's new entry
            indexes: list[str] = []  # the payload index set of its topic
            for item, (raw_topic, raw_pid) in zip(items, replies[1:], strict=True):
                target = decode_text(raw_topic) if raw_topic is not None else ""
                if target and target != topic and self.config.keys.hash_tags:
                    skipped += 1  # another topic's slot: cannot be moved atomically here
                    continue
                if not target:
                    keys += [item, item]
                    args.append("")
                    prefixes.append("")
                    indexes.append("")
                    continue
                target_count = count if target == topic else self._count(target)
                pid = _partition(raw_pid, target_count)
                keys += [item, ks.partition(target, pid)]
                args.append(str(pid))
                prefixes.append(ks.payload_prefix(target, pid))
                indexes.append(ks.payload_index(target))
            if len(keys) == 1:
                return MoveStats(0, 0, skipped)
            # on java-kryo a Java service's retry items share the entry's payload key: the
            # mover follows no reference there (nothing renamed, nothing unlinked)
            own = owned_prefix(self.config.encoding, ks.payload_topic_prefix(topic))
            args += [own, ks.payload_index(topic), *prefixes, *indexes]
            reply = call_script(self.client, "move_retries", keys, args)
        return MoveStats(int(reply[0]), int(reply[1]), skipped)

    def _count(self, topic: str) -> int:
        return partition_count_from_meta(self.client.hget(self.keys.meta(topic), "partitionCount"))

    def move_all(self) -> int:
        """Move due items of every registered topic (a few batches each); returns items moved."""
        with redis_errors("list topics"):
            topics = set_members(self.client, self.keys.registry())
        total = 0
        for topic in topics:
            for _ in range(_MAX_ROUNDS):
                try:
                    stats = self.move_due_stats(topic)
                except ConnectionLostError:
                    raise
                except MQError:
                    log.warning("moving retries of topic %r failed", topic, exc_info=True)
                    break
                total += stats.moved
                if stats.moved + stats.dropped + stats.skipped < self.batch:
                    break
        return total

    def run(self, stop: threading.Event, interval_s: float = 1.0) -> None:
        """Move due retries every ``interval_s`` until ``stop`` is set (errors are logged)."""
        while not stop.is_set():
            try:
                self.move_all()
            except MQError:
                log.warning("retry mover pass failed", exc_info=True)
            stop.wait(interval_s)


def _partition(raw: Any, count: int) -> int:
    """Item partition as Java reads it (invalid -> 0), folded into the topic's range."""
    try:
        pid = int(decode_text(raw)) if raw is not None else 0
    except ValueError:
        pid = 0
    if pid < 0:
        pid = 0
    return pid if pid < count else pid % count
