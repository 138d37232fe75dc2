"""Per-partition looks at a topic's streams: the keys of a hot partition, the memory
each partition stream takes, both bounded, and how skewed the partitions are.

- :func:`hot_keys` counts the message keys of the newest ``count`` entries of one
  partition (``XREVRANGE`` pieces, n at most :data:`HOT_KEYS_MAX` entries and about
  :data:`HOT_KEYS_BYTES` bytes): which keys make a partition hot, from a sample, never
  a scan.
- :func:`partition_rows` is length, last id and memory of each partition of one topic
  (``XINFO STREAM`` without ``FULL``, and the memory probe's
  :func:`mqcore.admin.probes.topic_memory`), with their skew.
- :func:`last_ids` is the last-generated id of some partitions of one topic
  (``XINFO STREAM`` each, one pipeline).
- :func:`skew` measures the busiest partition against the mean (the console's partition
  panel and ``mqcore topic partitions`` both use it); :func:`mark_skew` marks hot rows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from mqcore.admin.calls import pipeline_lenient
from mqcore.admin.probes import MEMORY_SAMPLES, topic_memory
from mqcore.codec import decode_text
from mqcore.config import RedisClient
from mqcore.errors import InvalidArgumentError
from mqcore.keys import KeySpace
from mqcore.range_reader import RangeReader

__all__ = [
    "HOT_KEYS_BYTES",
    "HOT_KEYS_DEFAULT",
    "HOT_KEYS_MAX",
    "SKEW_HOT",
    "SKEW_UNEVEN",
    "hot_keys",
    "last_ids",
    "mark_skew",
    "partition_rows",
    "skew",
]

HOT_KEYS_DEFAULT = 500
HOT_KEYS_MAX = 2000  # entries of one sample (read in pieces of at most 250)
HOT_KEYS_TOP = 20
HOT_KEYS_BYTES = 2 * 2**20  # of entries read per sample, about (big payloads: fewer entries)
HOT_KEYS_FIRST = 16  # entries of the first read, before their size is known
SKEW_HOT = 2.0  # max / mean at or above this: one partition takes twice its share
SKEW_UNEVEN = 1.5


def skew(values: Sequence[float | None]) -> dict[str, Any] | None:
    """``{"max", "mean", "ratio", "partition", "level"}`` of the known values (``ratio``:
    max / mean; ``level``: hot, uneven or even); None with fewer than two known values."""
    known = [(i, v) for i, v in enumerate(values) if v is not None]
    if len(known) < 2:
        return None
    hottest, top = max(known, key=lambda iv: (iv[1], -iv[0]))
    mean = sum(v for _, v in known) / len(known)
    ratio = top / mean if mean > 0 else None
    level = "even"
    if ratio is not None and ratio >= SKEW_HOT:
        level = "hot"
    elif ratio is not None and ratio >= SKEW_UNEVEN:
        level = "uneven"
    return {"max": top, "mean": mean, "ratio": ratio, "partition": hottest, "level": level}


def mark_skew(rows: list[dict[str, Any]], names: Sequence[str]) -> dict[str, dict[str, Any] | None]:
    """The :func:`skew` of each named column of ``rows`` (one row per partition, in order);
    the hottest row of a ``hot`` column gets ``hot_<name>: True``."""
    skews = {name: skew([r.get(name) for r in rows]) for name in names}
    for name, s in skews.items():
        if s is not None and s["level"] == "hot":
            rows[s["partition"]][f"hot_{name}"] = True
    return skews


def hot_keys(
    client: RedisClient,
    keys: KeySpace,
    topic: str,
    partition: int,
    *,
    count: int = HOT_KEYS_DEFAULT,
    top: int = HOT_KEYS_TOP,
    max_bytes: int = HOT_KEYS_BYTES,
) -> dict[str, Any]:
    """The ``top`` message keys of the newest ``count`` entries of one partition.

    Entries are read newest first in ``XREVRANGE`` pieces sized from the bytes seen so
    far (:class:`mqcore.range_reader.RangeReader`), about ``max_bytes`` in all (big
    payloads: fewer entries, ``bytes_bound`` True), so no read sends much more than that.
    ``sampled`` entries were read (from ``first_id``, the oldest, to ``last_id``); ``keys``
    are ``{"key", "count", "share"}``, most frequent first (ties by key); ``keyless``
    entries carried no key.
    """
    if not 1 <= count <= HOT_KEYS_MAX:
        raise InvalidArgumentError(f"count must be 1..{HOT_KEYS_MAX}")
    if not 1 <= top <= 100 or max_bytes < 1:
        raise InvalidArgumentError("top must be 1..100 and max_bytes >= 1")
    reader = RangeReader(
        client,
        keys.partition(topic, partition),
        "+",
        count,
        f"sample partition {partition} of {topic}",
        max_bytes=max_bytes,
        reverse=True,
        first=HOT_KEYS_FIRST,
    )
    entries = [entry for piece in reader for entry in piece]
    read, bound = reader.bytes_read, not reader.ended and len(entries) < count
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
        "bytes_read": read,
        "bytes_bound": bound,
        "first_id": decode_text(entries[-1][0]) if entries else None,
        "last_id": decode_text(entries[0][0]) if entries else None,
        "keyless": keyless,
        "distinct": len(counts),
        "keys": [{"key": k, "count": n, "share": n / sampled} for k, n in ranked],
    }


def last_ids(
    client: RedisClient, keys: KeySpace, topic: str, partitions: Sequence[int]
) -> dict[int, str]:
    """The last-generated id of each of ``partitions`` of ``topic`` (``XINFO STREAM``, one
    pipeline): the id of the last entry ever added, kept when entries are deleted, so an
    emptied partition still answers the id its data ended at; "0-0" for a stream never
    written or missing. The one "last id" of mqcore (:func:`partition_rows`, the snapshot,
    :meth:`mqcore.admin.Admin.lag` and the Spark source's latest offsets)."""
    replies = pipeline_lenient(
        client, [("xinfo_stream", (keys.partition(topic, p),)) for p in partitions]
    )
    return {
        p: decode_text(info.get("last-generated-id")) if info else "0-0"
        for p, info in zip(partitions, replies, strict=True)
    }


def partition_rows(
    client: RedisClient,
    keys: KeySpace,
    topic: str,
    partitions: int,
    *,
    samples: int = MEMORY_SAMPLES,
) -> dict[str, Any]:
    """Per partition of ``topic``: ``length``, ``last_id`` (the last id the stream gave, None
    for a missing stream) and ``memory_bytes`` (``MEMORY USAGE ... SAMPLES samples``), with
    the ``skew`` of length and memory (:func:`mark_skew`). Two pipelines, each call O(1)
    in the stream's size but for the bounded sampling of ``MEMORY USAGE``."""
    memory = topic_memory(client, keys, [(topic, partitions)], samples=samples)[topic]
    infos = pipeline_lenient(
        client, [("xinfo_stream", (keys.partition(topic, p),)) for p in range(partitions)]
    )
    rows: list[dict[str, Any]] = []
    for p, info in enumerate(infos):
        stream: Mapping[str, Any] = info if isinstance(info, Mapping) else {}
        last = stream.get("last-generated-id")
        rows.append(
            {
                "partition": p,
                "length": int(stream.get("length") or 0),
                "last_id": decode_text(last) if last is not None else None,
                "memory_bytes": memory[p] if p < len(memory) else None,
            }
        )
    skews = mark_skew(rows, ("length", "memory_bytes"))
    known = [r["memory_bytes"] for r in rows if r["memory_bytes"] is not None]
    return {
        "topic": topic,
        "samples": samples,
        "partitions": rows,
        "length": sum(r["length"] for r in rows),
        "memory_bytes": sum(known) if known else None,
        "skew": skews,
    }
