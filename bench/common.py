"""Benchmark plumbing: a fresh redis-server per benchmark, timing helpers, result rows.

Contract (README, "Benchmarks"): every budget is ours vs a raw baseline measured in the
same run on the same fresh Redis; each result says whether its budget holds.
A benchmark module is ``bench/p<N>_<what>.py`` with ``run(ctx) -> list[Result]``.

Every server a benchmark starts is watched by SLOWLOG (:class:`SlowWatch`): the
runner attaches to each result row the longest single command seen on each
server (``mq``, ``store``) while the benchmark measured, and flags any over
:data:`MAX_COMMAND_US`. A benchmark calls :meth:`BenchContext.measuring` when its
data is built, so that the population's own bulk commands are not counted.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
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
    # role ("mq", "store") -> (µs, command) of the longest command while it measured
    slowest: dict[str, tuple[int, str]] | None = None
    over: dict[str, int] | None = None  # role -> commands over MAX_COMMAND_US meanwhile

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
        data.pop("slowest")
        data.pop("over")
        data.update(ratio=round(self.ratio, 3), **{"pass": self.passed})
        data["ours"], data["raw"] = round(self.ours, 3), round(self.raw, 3)
        if self.extra:
            data["extra"] = self.extra
        if self.slowest is not None:
            data["max_command_us"] = {role: us for role, (us, _c) in self.slowest.items()}
            data["max_command"] = {role: cmd for role, (_u, cmd) in self.slowest.items()}
            data["max_command_over_5ms"] = self.slow
            data["commands_over_5ms"] = dict(self.over or {})
        return data

    @property
    def slow(self) -> bool:
        """A command over :data:`MAX_COMMAND_US` on any server while this was measured."""
        return any(us > MAX_COMMAND_US for us, _c in (self.slowest or {}).values())


MAX_COMMAND_US = 5000  # no single command may block a Redis server longer
WATCH_US = 100  # SLOWLOG threshold of the watch: shorter commands are reported as 0
_IGNORED = {b"slowlog", b"config", b"info", b"shutdown", b"save", b"bgsave", b"flushall"}


def _counted(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in entries if e["command"].split(b" ")[0].lower() not in _IGNORED]


def _over(entries: list[dict[str, Any]]) -> int:
    return sum(1 for e in _counted(entries) if e["duration"] > MAX_COMMAND_US)


def _worst(entries: list[dict[str, Any]]) -> tuple[int, str]:
    worst = max(_counted(entries), key=lambda e: e["duration"], default=None)
    if worst is None:
        return 0, ""
    return int(worst["duration"]), worst["command"][:80].decode(errors="replace")


class SlowWatch:
    """SLOWLOG of one benchmark server: the longest command since :meth:`arm`."""

    def __init__(self, client: redis.Redis, role: str) -> None:
        self.client, self.role = client, role
        self.port = client.connection_pool.connection_kwargs.get("port")
        self.worst: tuple[int, str] = (0, "")
        self.over = 0  # commands over MAX_COMMAND_US

    def arm(self) -> None:
        """Forget what was logged so far and watch from now on."""
        self.client.config_set("slowlog-max-len", 100_000)
        self.client.config_set("slowlog-log-slower-than", WATCH_US)
        self.client.slowlog_reset()
        self.worst, self.over = (0, ""), 0

    def note(self, seen: tuple[int, str]) -> None:
        self.worst = max(self.worst, seen, key=lambda w: w[0])

    def sweep(self) -> None:
        """Fold the logged commands into ``worst`` and empty the log."""
        entries = self.client.slowlog_get(100_000)
        self.note(_worst(entries))
        self.over += _over(entries)
        self.client.slowlog_reset()


_WATCHES: list[SlowWatch] = []  # of the servers running now


def _favour(server: EmbeddedRedis) -> None:
    """Run the server under test ahead of the benchmark's own load (a Spark JVM, client
    loops, anything else on the machine): on this 2-core machine they would otherwise
    preempt Redis in the middle of a command, and SLOWLOG would count that wait (a 4 ms
    scheduler tick, often more) as the command's time. A production Redis has its cores
    to itself; SLOWLOG should measure the work a command does. Real-time (SCHED_FIFO,
    lowest priority) when allowed: nice -10 alone still let the 50,000-partition pass
    log O(1) commands (XLEN, PTTL, XINFO GROUPS of one group) at 4-16 ms, and none over
    0.12 ms as SCHED_FIFO (its Redis then had no involuntary context switch). Redis
    sleeps between commands, so it cannot starve the benchmark. Without the right to
    raise a priority, nothing changes."""
    if server.process is not None:
        pid = server.process.pid
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, pid, -10)
        with contextlib.suppress(OSError):
            os.sched_setscheduler(pid, os.SCHED_FIFO, os.sched_param(1))


@dataclass
class BenchContext:
    quick: bool
    scale: float  # multiply data sizes by this (quick runs use < 1)
    # role -> longest command of the benchmark running now, on servers already stopped
    slowest: dict[str, tuple[int, str]] = field(default_factory=dict)
    over: dict[str, int] = field(default_factory=dict)  # role -> commands over MAX_COMMAND_US

    def n(self, full: int, minimum: int = 1) -> int:
        return max(minimum, int(full * self.scale))

    @contextmanager
    def fresh_redis(
        self, role: str = "mq"
    ) -> Iterator[tuple[EmbeddedRedis, redis.Redis, MQConfig]]:
        """A new redis-server for one benchmark, watched by SLOWLOG; never a default port.

        ``role`` names the server in the results: ``mq`` (the MQ's Redis), ``store``
        (the console store's), ``mq+store`` (one server holding both)."""
        with tempfile.TemporaryDirectory(prefix="bench-redis-") as tmp:
            server = EmbeddedRedis(Path(tmp))
            server.start()
            _favour(server)
            client = redis.Redis(host=server.host, port=server.port, socket_timeout=30)
            watch = SlowWatch(client, role)
            watch.arm()
            _WATCHES.append(watch)
            try:
                yield server, client, MQConfig.from_url(server.url, socket_timeout=30)
                watch.sweep()
                seen = self.slowest.get(role, (0, ""))
                self.slowest[role] = max(seen, watch.worst, key=lambda w: w[0])
                self.over[role] = self.over.get(role, 0) + watch.over
            finally:
                _WATCHES.remove(watch)
                client.close()
                server.stop()

    @contextmanager
    def unwatched(self) -> Iterator[None]:
        """A raw baseline's own commands are not ours to bound (e.g. the plain loop of
        P10 reads pages of 5,000 as its issue defines it): fold what SLOWLOG holds so far
        into the watch, run the block, and forget what it logged."""
        for watch in _WATCHES:
            watch.sweep()
        try:
            yield
        finally:
            for watch in _WATCHES:
                watch.client.slowlog_reset()

    def measuring(self) -> None:
        """The benchmark's data is built: watch the running servers' SLOWLOG from here on."""
        for watch in _WATCHES:
            watch.arm()

    def take_slowest(self) -> tuple[dict[str, tuple[int, str]], dict[str, int]]:
        """Per server role, the longest command of the benchmark that just ran and how many
        went over :data:`MAX_COMMAND_US` (and reset)."""
        out, over = self.slowest, self.over
        self.slowest, self.over = {}, {}
        return out, over


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
    """Longest single command (µs) issued while ``fn`` ran, and its name (SLOWLOG, threshold 0).

    The server's :class:`SlowWatch` keeps what it logged before and sees this too."""
    for watch in _WATCHES:
        watch.sweep()
    client.config_set("slowlog-log-slower-than", 0)
    client.config_set("slowlog-max-len", 100000)
    client.slowlog_reset()
    fn()
    entries = client.slowlog_get(100000)
    seen = _worst(entries)
    client.config_set("slowlog-log-slower-than", WATCH_US)
    client.slowlog_reset()
    port = client.connection_pool.connection_kwargs.get("port")
    for watch in _WATCHES:
        if watch.port == port:
            watch.note(seen)
            watch.over += _over(entries)
    return seen


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

    @property
    def ours_pooled(self) -> float:
        """Ours over all rounds of one size: a rate's total count / total time."""
        return statistics.harmonic_mean(self.ours_runs)

    @property
    def raw_pooled(self) -> float:
        return statistics.harmonic_mean(self.raw_runs)

    def result(
        self,
        id: str,
        what: str,
        *,
        unit: str,
        budget: str,
        pooled: bool = False,
        extra: dict[str, Any] | None = None,
    ) -> Result:
        """The row of these rounds: their medians, or with ``pooled`` their pooled rates."""
        if pooled:
            return Result(id, what, self.ours_pooled, self.raw_pooled, unit, budget, extra)
        return Result(id, what, self.ours, self.raw, unit, budget, extra)


def interleaved(raw: Callable[[int], float], ours: Callable[[int], float], rounds: int) -> Rounds:
    """Run ``rounds`` rounds that alternate raw and ours (each gets the round index): a noisy
    moment on a shared machine hits both sides, not one."""
    out = Rounds([], [])
    for i in range(rounds):
        out.raw_runs.append(raw(i))
        out.ours_runs.append(ours(i))
    return out
