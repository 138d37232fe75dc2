"""Which partition a produced message goes to, and how many partitions a topic has.

An explicit partition must exist (the count is re-read once in case the topic
grew); a key goes where the Java client puts it (:func:`partition_for_key`);
anything else goes round robin from a random start. The topic's partition count
is cached for ``cache_ttl_s``; an unknown topic is refused with
:class:`UnknownTopicError`.
"""

from __future__ import annotations

import itertools
import random
import threading
import time
from collections.abc import Iterator

from mqcore.config import RedisClient
from mqcore.errors import InvalidArgumentError, UnknownPartitionError, UnknownTopicError
from mqcore.keys import KeySpace
from mqcore.partition import partition_for_key
from mqcore.topics import read_partition_count
from mqcore.validate import validate_topic

__all__ = ["Partitioner"]

_KEY_CACHE = 10_000  # keys whose partition is remembered (hot keys repeat)


class Partitioner:
    """Partition counts (cached briefly) and the partition of each message (thread-safe)."""

    def __init__(self, client: RedisClient, keys: KeySpace, *, cache_ttl_s: float) -> None:
        self.client = client
        self.keys = keys
        self._cache_ttl_s = cache_ttl_s
        self._counts: dict[str, tuple[int, float]] = {}
        self._rr: dict[str, Iterator[int]] = {}
        self._key_parts: dict[str, tuple[int, int]] = {}
        self._lock = threading.Lock()

    def count(self, topic: str, *, refresh: bool = False) -> int:
        """The topic's partition count; ``refresh`` skips the cache."""
        cached = None if refresh else self._counts.get(topic)
        now = time.monotonic()
        if cached is not None and cached[1] > now:
            return cached[0]
        validate_topic(topic)
        try:
            count = read_partition_count(self.client, self.keys, topic, f"look up topic {topic!r}")
        except UnknownTopicError:
            self.invalidate(topic)
            raise UnknownTopicError(f"unknown topic {topic!r}: create it first") from None
        with self._lock:
            self._counts[topic] = (count, now + self._cache_ttl_s)
        return count

    def invalidate(self, topic: str | None = None) -> None:
        """Forget cached partition counts (all, or one topic's)."""
        with self._lock:
            if topic is None:
                self._counts.clear()
            else:
                self._counts.pop(topic, None)

    def choose(self, topic: str, count: int, key: str | None, partition: int | None) -> int:
        """The partition of one message to ``topic``, which had ``count`` partitions."""
        if partition is not None:
            if isinstance(partition, bool) or not isinstance(partition, int):
                raise InvalidArgumentError(f"partition must be an integer, got {partition!r}")
            if not 0 <= partition < count:
                count = self.count(topic, refresh=True)  # the topic may have grown
                if not 0 <= partition < count:
                    raise UnknownPartitionError(
                        f"topic {topic!r} has partitions 0..{count - 1}; got {partition}"
                    )
            return partition
        if key is not None:
            cached = self._key_parts.get(key)
            if cached is not None and cached[0] == count:
                return cached[1]
            part = partition_for_key(key, count)
            if len(self._key_parts) >= _KEY_CACHE:
                self._key_parts.clear()
            self._key_parts[key] = (count, part)
            return part
        rr = self._rr.get(topic)
        if rr is None:
            with self._lock:
                rr = self._rr.setdefault(topic, itertools.count(random.randrange(1 << 16)))
        return next(rr) % count
