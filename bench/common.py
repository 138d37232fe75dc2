"""Benchmark plumbing: a fresh redis-server per benchmark, timing helpers, result rows.

Contract (PERFORMANCE.md): every budget is ours vs a raw baseline measured in the
same run on the same fresh Redis; each result says whether its budget holds.
A benchmark module is ``bench/p<N>_<what>.py`` with ``run(ctx) -> list[Result]``.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import redis

from mqcore.config import MQConfig
from scripts.embedded import EmbeddedRedis


@dataclass
class Result:
    id: str
    what: str
    ours: float
    raw: float
    unit: str
    budget: str  # e.g. ">= 0.8x" (ours/raw must be at least) or "<= 1.5x" (at most)
    extra: dict[str, Any] | None = None

    @property
    def ratio(self) -> float:
        return self.ours / self.raw if self.raw else float("inf")

    @property
    def passed(self) -> bool:
        op, value = self.budget.split()
        limit = float(value.rstrip("x"))
        return self.ratio >= limit if op == ">=" else self.ratio <= limit

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("extra")
        data.update(ratio=round(self.ratio, 3), **{"pass": self.passed})
        data["ours"], data["raw"] = round(self.ours, 3), round(self.raw, 3)
        if self.extra:
            data["extra"] = self.extra
        return data


@dataclass
class BenchContext:
    quick: bool
    scale: float  # multiply data sizes by this (quick runs use < 1)

    def n(self, full: int, minimum: int = 1) -> int:
        return max(minimum, int(full * self.scale))

    @contextmanager
    def fresh_redis(self) -> Iterator[tuple[EmbeddedRedis, redis.Redis, MQConfig]]:
        """A new redis-server for one benchmark; never a server on a default port."""
        with tempfile.TemporaryDirectory(prefix="bench-redis-") as tmp:
            server = EmbeddedRedis(Path(tmp))
            server.start()
            client = redis.Redis(host=server.host, port=server.port, socket_timeout=30)
            try:
                yield server, client, MQConfig.from_url(server.url, socket_timeout=30)
            finally:
                client.close()
                server.stop()


def best_of(fn: Callable[[], float], repeats: int = 3) -> float:
    """Median of ``repeats`` runs of ``fn`` (each returns a measured figure)."""
    return statistics.median(fn() for _ in range(repeats))


def rate(count: int, fn: Callable[[], Any]) -> float:
    """Items per second for ``fn`` processing ``count`` items."""
    start = time.perf_counter()
    fn()
    return count / (time.perf_counter() - start)


def elapsed_ms(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def redis_time_ms(client: redis.Redis, fn: Callable[[], Any]) -> tuple[float, float]:
    """(wall ms, Redis CPU ms per INFO commandstats usec totals) spent by ``fn``."""

    def total_usec() -> int:
        stats = client.info("commandstats")
        return sum(int(v["usec"]) for k, v in stats.items() if k.startswith("cmdstat_"))

    client.config_resetstat()
    before = total_usec()
    wall = elapsed_ms(fn)
    return wall, (total_usec() - before) / 1000


def slowlog_max_us(client: redis.Redis, fn: Callable[[], Any]) -> tuple[int, str]:
    """Longest single command (µs) issued while ``fn`` ran, and its name (SLOWLOG, threshold 0)."""
    client.config_set("slowlog-log-slower-than", 0)
    client.config_set("slowlog-max-len", 100000)
    client.slowlog_reset()
    fn()
    entries = client.slowlog_get(100000)
    client.config_set("slowlog-log-slower-than", 10000)
    ignored = {b"slowlog", b"config", b"info"}
    worst = max(
        (e for e in entries if e["command"].split(b" ")[0].lower() not in ignored),
        key=lambda e: e["duration"],
        default=None,
    )
    if worst is None:
        return 0, ""
    return int(worst["duration"]), worst["command"][:80].decode(errors="replace")


@dataclass
class Rounds:
    """Per-round figures of :func:`interleaved`, and their medians."""

    ours_runs: list[float]
    raw_runs: list[float]

    @property
    def ours(self) -> float:
        return statistics.median(self.ours_runs)

    @property
    def raw(self) -> float:
        return statistics.median(self.raw_runs)


def interleaved(raw: Callable[[int], float], ours: Callable[[int], float], rounds: int) -> Rounds:
    """Run ``rounds`` rounds that alternate raw and ours (each gets the round index): a noisy
    moment on a shared machine hits both sides, not one."""
    out = Rounds([], [])
    for i in range(rounds):
        out.raw_runs.append(raw(i))
        out.ours_runs.append(ours(i))
    return out
