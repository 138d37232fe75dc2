"""Per-partition looks at a topic's streams: the keys of a hot partition and the memory
each partition stream takes, both bounded.

- :func:`hot_keys` counts the message keys of the newest ``count`` entries of one
  partition (one ``XREVRANGE + - COUNT n``, n at most :data:`HOT_KEYS_MAX`): which
  keys make a partition hot, from a sample, never a scan.
- :func:`topic_memory` asks ``MEMORY USAGE key SAMPLES s`` of every partition stream of
  some topics, in one pipeline
  (s at most :data:`MEMORY_SAMPLES_MAX`; Redis samples that many nodes of the stream
  and extrapolates, so the cost does not grow with the stream).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import islice
from typing import Any

from mqcore.admin.calls import pipeline_lenient
from mqcore.boundary import redis_errors
from mqcore.codec import decode_text
from mqcore.config import RedisClient
from mqcore.errors import InvalidArgumentError
from mqcore.keys import KeySpace

__all__ = [
    "HOT_KEYS_DEFAULT",
    "HOT_KEYS_MAX",
    "MEMORY_SAMPLES",
    "MEMORY_SAMPLES_MAX",
    "hot_keys",
    "topic_memory",
]

HOT_KEYS_DEFAULT = 500
HOT_KEYS_MAX = 2000  # entries of one XREVRANGE: well under a millisecond of Redis time
HOT_KEYS_TOP = 20
MEMORY_SAMPLES = 5  # Redis's own default for MEMORY USAGE
MEMORY_SAMPLES_MAX = 50


def hot_keys(
    client: RedisClient,
    keys: KeySpace,
    topic: str,
    partition: int,
    *,
    count: int = HOT_KEYS_DEFAULT,
    top: int = HOT_KEYS_TOP,
) -> dict[str, Any]:
    """The ``top`` message keys of the newest ``count`` entries of one partition.

    ``sampled`` entries were read (from ``first_id``, the oldest, to ``last_id``);
    ``keys`` are ``{"key", "count", "share"}``, most frequent first (ties by key);
    ``keyless`` entries carried no key; ``distinct`` keys were seen in the sample.
    """
    if not 1 <= count <= HOT_KEYS_MAX:
        raise InvalidArgumentError(f"count must be 1..{HOT_KEYS_MAX}")
    if not 1 <= top <= 100:
        raise InvalidArgumentError("top must be 1..100")
    with redis_errors(f"sample partition {partition} of {topic}"):
        entries = client.xrevrange(keys.partition(topic, partition), "+", "-", count=count)
    counts: Counter[str] = Counter()
    keyless = 0
    for _, fields in entries:
        raw = (fields or {}).get(b"key", (fields or {}).get("key"))
        if raw is None:
            keyless += 1
        else:
            counts[decode_text(raw)] += 1
    sampled = len(entries)
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
    return {
        "topic": topic,
        "partition": partition,
        "requested": count,
        "sampled": sampled,
        "first_id": decode_text(entries[-1][0]) if entries else None,
        "last_id": decode_text(entries[0][0]) if entries else None,
        "keyless": keyless,
        "distinct": len(counts),
        "keys": [{"key": k, "count": n, "share": n / sampled} for k, n in ranked],
    }


def topic_memory(
    client: RedisClient,
    keys: KeySpace,
    topics: Sequence[tuple[str, int]],
    *,
    samples: int = MEMORY_SAMPLES,
) -> dict[str, list[int | None]]:
    """``MEMORY USAGE`` in bytes of each partition stream of each (topic, partitions), in one
    pipeline; None for a stream that does not exist."""
    if not 1 <= samples <= MEMORY_SAMPLES_MAX:
        raise InvalidArgumentError(f"samples must be 1..{MEMORY_SAMPLES_MAX}")
    calls = [
        ("memory_usage", (keys.partition(topic, p), samples))
        for topic, partitions in topics
        for p in range(max(0, partitions))
    ]
    replies = iter(pipeline_lenient(client, calls))
    return {
        topic: [r if isinstance(r, int) else None for r in islice(replies, max(0, partitions))]
        for topic, partitions in topics
    }
