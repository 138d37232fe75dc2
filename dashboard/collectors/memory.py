"""Per-topic memory: what a topic's partition streams take in Redis, sampled with a bounded
cost and kept as the ``memory_bytes`` series and in the snapshot (``topic["memory"]``).

Once a minute the pass asks ``MEMORY USAGE key SAMPLES n`` (one pipeline) of the partition
streams of the next topics in turn (at most ``MEMORY_PROBE_STREAMS`` streams; the cursor in the
collector state says where the next minute starts), so a deployment of any size costs
the same per minute and every topic is measured every ``topics x partitions / budget``
minutes. The growth the ``memory_growth`` alert watches is the newest sample against the
oldest one of the ``MEMORY_GROWTH_WINDOW_S`` window (from the stored series).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dashboard.collectors.series import MEMORY_METRIC

__all__ = ["MemoryPass", "memory_of", "memory_pass", "memory_pick"]

Points = list[tuple[int, float]]


@dataclass
class MemoryPass:
    points: list[tuple[str, str, float]] = field(default_factory=list)
    state: dict[str, dict[str, Any]] = field(default_factory=dict)  # topic -> latest memory
    cursor: int = 0
    errors: list[str] = field(default_factory=list)


def memory_pick(
    topics: list[tuple[str, int]], cursor: int, budget: int
) -> tuple[list[tuple[str, int]], int]:
    """The topics (name, partitions) from ``cursor`` on (wrapping) whose streams fit in
    ``budget`` (always at least one), and the cursor of the next minute."""
    if not topics:
        return [], 0
    start = cursor % len(topics)
    picked: list[tuple[str, int]] = []
    streams = 0
    for i in range(len(topics)):
        name, parts = topics[(start + i) % len(topics)]
        if picked and streams + parts > budget:
            break
        picked.append((name, parts))
        streams += parts
    return picked, (start + len(picked)) % len(topics)


def memory_pass(
    snap: Mapping[str, Any],
    previous: Mapping[str, Any],
    cursor: int,
    *,
    fetch: Callable[[list[tuple[str, int]]], dict[str, list[int | None]]],
    history: Callable[[list[str]], dict[str, Points]],
    now_ms: int,
    budget: int,
) -> MemoryPass:
    """Measure the next topics: their points, the new per-topic memory state (topics gone
    from the snapshot dropped) and the next cursor. When the read fails, topics keep their
    last values."""
    topics = [
        (str(t["topic"]), int(t.get("partitions") or 0))
        for t in snap.get("topics") or []
        if not t.get("error")
    ]
    names = {name for name, _ in topics}
    out = MemoryPass(state={k: dict(v) for k, v in previous.items() if k in names})
    picked, out.cursor = memory_pick(topics, cursor, budget)
    measured: dict[str, float] = {}
    per_partition: dict[str, list[int | None]] = {}
    try:
        got = fetch(picked) if picked else {}
    except Exception as exc:  # the probe's failure never fails the pass: last values stay
        out.errors.append(f"{len(picked)} topics: {type(exc).__name__}")
        got = {}
    for name, sizes in got.items():
        known = [s for s in sizes if s is not None]
        if known:
            measured[name] = float(sum(known))
            per_partition[name] = list(sizes)
    past = history(sorted(measured)) if measured else {}
    for name, value in measured.items():
        points = [p for p in past.get(name) or [] if p[0] < now_ms]
        start_ms, start = points[0] if points else (now_ms, value)
        out.state[name] = {
            "bytes": value,
            "at_ms": now_ms,
            "from_bytes": start,
            "from_ms": int(start_ms),
            "partitions": per_partition[name],
        }
        out.points.append((MEMORY_METRIC, name, value))
    return out


def memory_of(state: Mapping[str, Any], topic: str) -> dict[str, Any] | None:
    """A topic's latest memory for the snapshot (``topic["memory"]``), None before its first
    sample."""
    mem = state.get(topic)
    return dict(mem) if isinstance(mem, Mapping) else None
