"""Writing series points: this pass's APPENDs, the series index and bucket roll-ups.

Points go out through ``dashboard/scripts/append_points.lua`` (:data:`APPEND`, run as
mqcore runs its scripts: :func:`mqcore.scripts.script_for`): one call APPENDs one point
to each of up to :data:`~dashboard.store.batches.MEMBERS_PER_COMMAND` series of one tier
and point format (their points packed back to back in one argument) and answers the new
lengths of the series that reached their cap: the series that outgrew their retention
(see :func:`dashboard.store.retention.trim_over_cap`).

The series index (a sorted set of ``metric<US>entity`` scored by the last write) lets
series of vanished entities be deleted (:func:`dashboard.store.retention.forget_vanished`).
A refresh (with the coarsest roll-up and a process's first pass) has each script call
index its own keys (half as many keys a call then: an APPEND and a ZADD member each);
other passes ask the script for the keys it created, and the next pass indexes their
series (ZADDs of at most as many members).

A pass's points are turned into script calls as they are sent, a round trip
(:data:`~dashboard.store.batches.BULK_PER_EXECUTE` calls) at a time, from a thread of
its own: the next round trip is built while Redis works through the last one, and a
round trip's keys and values are let go once its replies are read. At 50,000 partitions
that is a quarter of a million keys that are never all held at once.
A roll-up reads the raw tails it needs through ``dashboard/scripts/tail_points.lua``
(:data:`TAIL`), as many series per call.
"""

from __future__ import annotations

import contextlib
import struct
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import redis
from django.conf import settings

from dashboard.store.batches import BULK_PER_EXECUTE, MEMBERS_PER_COMMAND, WHAT, chunks
from dashboard.store.keys import ConsoleKeys, SeriesKeys
from dashboard.store.points import (
    Tier,
    decode_points,
    pack_points,
    point_struct,
    rollup_value,
    tier_limits,
    tiers,
)
from mqcore.boundary import redis_errors
from mqcore.scripts import script_for
from mqcore.wire import Command, Wire

__all__ = ["APPEND", "TAIL", "Lengths", "SeriesWriter"]

APPEND = script_for("append_points", "dashboard.scripts")
TAIL = script_for("tail_points", "dashboard.scripts")

# series key -> (bytes after this pass, tier, point format), for the series near their cap
Lengths = dict[str, tuple[int, Tier, struct.Struct]]
Triples = Iterable[tuple[str, str, float]]

# per store client and key prefix: clusters whose index this process refreshed, per
# cluster the index members of the series created since its last pass, and per cluster the
# key names of its series (ConsoleKeys.series_keys: asked again only for a metric not seen)
_State = tuple[set[str], dict[str, set[str]], dict[str, SeriesKeys]]
_CLIENT_STATE: weakref.WeakKeyDictionary[Any, dict[str, _State]] = weakref.WeakKeyDictionary()
# store clients on which this process made sure of the scripts (a fresh store does not have
# them: the first pass's calls would all come back NOSCRIPT and go out again)
_SCRIPTS_LOADED: weakref.WeakSet[Any] = weakref.WeakSet()


@dataclass(slots=True)
class _Call:
    """One script call being filled: points of one tier and point format, all stamped
    ``stamp`` (epoch s); ``values[i]`` goes to ``keys[i]``."""

    tier: Tier
    point: struct.Struct
    stamp: int
    keys: list[str] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    metrics: list[str] = field(default_factory=list)  # of each key, when created ones are told


class _RoundTrips:
    """Script calls sent a round trip at a time as they fill, the next one written before
    the last one's replies are read; each round trip's calls are let go with its replies.

    ``index``: the mode the script is asked for (``all``, ``created`` or ``none``);
    ``created`` gathers the index members of the keys the calls created."""

    def __init__(
        self,
        writer: SeriesWriter,
        cluster: str,
        *,
        index: str = "none",
        score: int = 0,
        created: set[str] | None = None,
    ) -> None:
        self.writer, self.cluster = writer, cluster
        self.names = writer.names(cluster)
        self.index, self.score, self.created = index, score, created
        self.near: Lengths = {}
        self.failed: Exception | None = None
        self._filled: list[_Call] = []
        self._waiting: tuple[list[_Call], list[Command], Callable[[], list[Any]]] | None = None
        self._wire = Wire(writer.r, BULK_PER_EXECUTE, WHAT)

    def add(self, call: _Call) -> None:
        self._filled.append(call)
        if len(self._filled) >= BULK_PER_EXECUTE:
            self.send()

    def send(self, extra: Sequence[Command] = ()) -> None:
        """Write the calls filled so far (and ``extra`` commands), then read the replies of
        the round trip before."""
        calls, self._filled = self._filled, []
        cmds = [self._command(call) for call in calls]
        cmds += extra
        if cmds:
            before, self._waiting = self._waiting, (calls, cmds, self._wire.send(cmds))
        else:
            before, self._waiting = self._waiting, None
        if before is not None:
            self._read(*before)

    def finish(self, extra: Sequence[Command] = ()) -> Lengths:
        """Send what is left, read every reply; the first error raises."""
        try:
            self.send(extra)
            self.send()
        except BaseException:
            self.abandon()
            raise
        if self.failed is not None:
            raise self.failed
        return self.near

    def abandon(self) -> None:
        """After an error: read the round trip still out, if any (its connection goes back)."""
        waiting, self._waiting = self._waiting, None
        if waiting is not None:
            with contextlib.suppress(Exception):
                waiting[2]()

    def _command(self, call: _Call) -> Command:
        size, floor = call.point.size, tier_limits(call.tier, call.point)[1]
        blob = pack_points(call.point, call.stamp, call.values)
        mode: tuple[Any, ...] = (self.index,)
        if self.index == "all":
            # the key name up to the metric: the prefix of a metric "" ends with its ':'
            mode = ("all", self.score, self.names.metric_at[call.tier.name])
        return APPEND.command([self.names.index, *call.keys], [blob, size, floor, *mode])

    def _read(
        self, calls: list[_Call], cmds: list[Command], reply: Callable[[], list[Any]]
    ) -> None:
        replies = self.writer.replies(cmds, reply())
        names = self.writer.names(self.cluster)
        for call, got in zip(calls, replies, strict=False):
            if isinstance(got, Exception):
                self.failed = self.failed or got
                continue
            for j in range(0, len(got), 2):
                key, length = call.keys[got[j] - 1], got[j + 1]
                if length == call.point.size and self.created is not None:  # a new series
                    metric = call.metrics[got[j] - 1]
                    entity = key[len(names.prefix[call.tier.name, metric]) :]
                    self.created.add(names.member[metric] + entity)
                else:
                    self.near[key] = (length, call.tier, call.point)
        for got in replies[len(calls) :]:
            if isinstance(got, Exception):
                self.failed = self.failed or got


class SeriesWriter:
    """Appends points to the series of one store client and key prefix."""

    def __init__(self, client: redis.Redis, keys: ConsoleKeys) -> None:
        self.r = client
        self.keys = keys
        # per client, not per writer: the collector makes a store per pass
        per_client = _CLIENT_STATE.get(client)
        if per_client is None:
            per_client = _CLIENT_STATE[client] = {}
        state = per_client.setdefault(keys.prefix, (set(), {}, {}))
        self._indexed: set[str] = state[0]  # clusters whose series index was refreshed
        # cluster -> index members of the series created since, for the next pass to index
        self._created: dict[str, set[str]] = state[1]
        self._names: dict[str, SeriesKeys] = state[2]

    def names(self, cluster: str, metrics: Iterable[str] = ()) -> SeriesKeys:
        """The key names of ``cluster``'s series, ``metrics`` among them (the store's key
        module is asked once, and again only when a metric was never written here)."""
        names = self._names.get(cluster)
        if names is None or not names.member.keys() >= set(metrics):
            known = names.member if names is not None else {}
            tier_names = [t.name for t in tiers()]
            names = self.keys.series_keys(cluster, tier_names, [*known, *metrics])
            self._names[cluster] = names
        return names

    def indexed(self, cluster: str) -> bool:
        """Whether this process already refreshed the series index of ``cluster``."""
        return cluster in self._indexed

    def append(
        self, cluster: str, points: Mapping[str, Triples], now_ms: int, *, index: bool = True
    ) -> Lengths:
        """Append this pass's points (tier name -> (metric, entity, value) triples).

        ``index``: also refresh the series index (last write per metric/entity) of every
        series written; without, only the series created since the last pass are indexed.
        NaN and None values are skipped.
        """
        return self.append_sent(cluster, points, now_ms, index=index)()

    def append_sent(
        self, cluster: str, points: Mapping[str, Triples], now_ms: int, *, index: bool = True
    ) -> Callable[[], Lengths]:
        """:meth:`append` from a thread of its own, started now: the returned function (call
        it, in a ``finally``) waits for it and returns what :meth:`append` does."""
        self._load_scripts()
        created = self._created.setdefault(cluster, set())
        # created since the pass before: indexed now (if this write fails, by the next refresh
        # as long as they are written)
        members, pending = sorted(created), set() if index else created
        created.clear()
        done: list[Lengths] = []
        failed: list[BaseException] = []

        trips = _RoundTrips(
            self,
            cluster,
            index="all" if index else "created",
            score=now_ms,
            created=None if index else pending,
        )

        def write() -> None:
            try:
                for tier_name, triples in points.items():
                    self._calls(trips, cluster, tier_name, triples, now_ms // 1000)
                done.append(trips.finish(self._index_commands(cluster, members, now_ms)))
            except BaseException as exc:  # raised to the caller by the returned function
                trips.abandon()
                failed.append(exc)

        writer = threading.Thread(target=write, name="store-series", daemon=True)
        writer.start()

        def lengths() -> Lengths:
            writer.join()
            if failed:
                raise failed[0]
            if index:
                self._indexed.add(cluster)
            return done[0]

        return lengths

    def rollup(
        self, cluster: str, series: Sequence[tuple[str, str]], closed: Mapping[str, int]
    ) -> Lengths:
        """One point per series for each closed bucket (tier -> bucket index), from the
        raw points inside it."""
        tier_map = {t.name: t for t in tiers()}
        interval = max(1, int(settings.COLLECT_INTERVAL_S))
        series = list(dict.fromkeys(series))
        if not series:
            return {}
        self._load_scripts()
        longest = max(tier_map[name].bucket_s for name in closed)
        n = longest // interval + 2  # raw points that can fall into the longest bucket
        prefix = self.names(cluster, {m for m, _ in series}).prefix
        raw_keys = [prefix["raw", m] + e for m, e in series]
        starts = [-n * point_struct(m).size for m, _ in series]
        cmds = [
            TAIL.command(keys, args)
            for keys, args in zip(chunks(raw_keys), chunks(starts), strict=True)
        ]
        tails = [tail for reply in self._run(cmds) for tail in reply]
        trips = _RoundTrips(self, cluster)
        for name, bucket in closed.items():
            tier = tier_map[name]
            lo, hi = bucket * tier.bucket_s * 1000, (bucket + 1) * tier.bucket_s * 1000
            rolled: list[tuple[str, str, float]] = []
            for (metric, entity), tail in zip(series, tails, strict=True):
                if not tail:
                    continue
                values = [v for t, v in decode_points(tail, point_struct(metric)) if lo <= t < hi]
                if values:
                    rolled.append((metric, entity, rollup_value(metric, values)))
            self._calls(trips, cluster, name, rolled, lo // 1000)
        return trips.finish()

    def _calls(
        self, trips: _RoundTrips, cluster: str, tier_name: str, triples: Triples, stamp: int
    ) -> None:
        """``triples`` of one tier as script calls of one point format each, handed to
        ``trips`` as they fill."""
        tier = next(t for t in tiers() if t.name == tier_name)
        # a call that also indexes its keys does twice the work per key: half as many keys
        per_call = MEMBERS_PER_COMMAND // 2 if trips.index == "all" else MEMBERS_PER_COMMAND
        filling: dict[struct.Struct, _Call] = {}  # point format -> the call it fills
        formats: dict[str, tuple[struct.Struct, str]] = {}  # metric -> its format, key prefix
        told = trips.created is not None  # the calls tell which keys they created
        for metric, entity, value in triples:
            if value is None or value != value:  # NaN
                continue
            got = formats.get(metric)
            if got is None:
                prefix = self.names(cluster, (metric,)).prefix[tier_name, metric]
                got = formats[metric] = (point_struct(metric), prefix)
            point, prefix = got
            call = filling.get(point)
            if call is None or len(call.keys) >= per_call:
                if call is not None:
                    trips.add(call)
                call = filling[point] = _Call(tier, point, stamp)
            call.keys.append(prefix + entity)
            call.values.append(value)
            if told:
                call.metrics.append(metric)
        for call in filling.values():
            trips.add(call)

    def _index_commands(self, cluster: str, members: Iterable[str], score: int) -> list[Command]:
        index_key = self.names(cluster).index
        cmds: list[Command] = []
        for part in chunks(list(members)):
            scored: list[Any] = [score] * (2 * len(part))
            scored[1::2] = part
            cmds.append(("ZADD", index_key, *scored))
        return cmds

    def _load_scripts(self) -> None:
        if self.r not in _SCRIPTS_LOADED:
            with redis_errors(WHAT):
                known = self.r.script_exists(APPEND.sha, TAIL.sha)
                for script, loaded in zip((APPEND, TAIL), known, strict=True):
                    if not loaded:
                        script.load(self.r)
            _SCRIPTS_LOADED.add(self.r)

    def _run(self, cmds: list[Command]) -> list[Any]:
        """Run the commands, :data:`BULK_PER_EXECUTE` per round trip; error replies raise."""
        wire = Wire(self.r, BULK_PER_EXECUTE, WHAT)
        replies = self.replies(cmds, wire.run(cmds, step=BULK_PER_EXECUTE))
        for reply in replies:
            if isinstance(reply, Exception):
                raise reply
        return replies

    def replies(self, cmds: list[Command], replies: list[Any]) -> list[Any]:
        """``replies`` of ``cmds``, the calls of scripts the store forgot (restart, flush)
        loaded and run again."""
        missing = [i for i, reply in enumerate(replies) if _noscript(reply)]
        if missing:
            with redis_errors(WHAT):
                APPEND.load(self.r)
                TAIL.load(self.r)
            wire = Wire(self.r, BULK_PER_EXECUTE, WHAT)
            again = wire.run([cmds[i] for i in missing], step=BULK_PER_EXECUTE)
            for i, reply in zip(missing, again, strict=True):
                replies[i] = reply
        return replies


def _noscript(reply: Any) -> bool:
    return isinstance(reply, redis.exceptions.NoScriptError)
