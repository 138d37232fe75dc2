"""The series of the console store (:class:`Series`): a pass's points handed over as they
are derived (:class:`PassPoints`), roll-ups, keeping series inside their retention, and
reading them back for charts. How a point is packed and the tiers are
:mod:`dashboard.store.points`; the writer thread's script calls :mod:`dashboard.store.appends`;
commands go out in bounded batches through :mod:`dashboard.store.batches`.

A pass's points are appended from a thread of their own while the pass goes on
(:meth:`Series.append_sent`). When a bucket of a coarse tier closes, the raw points of that
bucket become one point of the tier stamped with the bucket start - the MAX for gauges
(peaks matter), the LAST value for counters; a roll-up reads the raw tails it needs through
``dashboard/scripts/tail_points.lua`` (:data:`TAIL`).

The series index (a sorted set of ``metric<US>entity`` scored by the last write) lets
series of vanished entities be deleted. A refresh (with the coarsest roll-up and a
process's first pass) has each script call index its own keys (half as many keys a call
then: an APPEND and a ZADD member each); other passes ask the script for the keys it
created, and the next pass indexes their series (ZADDs of at most as many members).

Retention. A series longer than its retention by 10% is rewritten with only the points
inside the retention (:func:`~dashboard.store.points.tier_limits`, :func:`trim_over_cap`),
so the bytes per series are bounded by retention / cadence x point size; the series of
entities not written for longer than the longest retention are dropped
(:func:`forget_vanished`).

Reading (:func:`read_series`): the finest tier that covers the window, up to the present.
"""

from __future__ import annotations

import struct
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any

import redis
from django.conf import settings

from dashboard.store.appends import APPEND, Triples, write_points
from dashboard.store.batches import BULK_PER_EXECUTE, WHAT, chunks, run_batched
from dashboard.store.keys import ConsoleKeys, SeriesKeys
from dashboard.store.points import (
    COUNTER,
    POINT,
    TIERS,
    Lengths,
    Tier,
    point_struct,
    tier_for,
    tier_limits,
    tiers,
)
from mqcore.boundary import redis_errors
from mqcore.scripts import script_for
from mqcore.wire import Command, Wire, first_error

__all__ = [
    "TAIL",
    "VANISHED_PER_PASS",
    "PassPoints",
    "Series",
    "decode_points",
    "forget_vanished",
    "read_series",
    "rollup_value",
    "tier_points",
    "trim_over_cap",
    "trim_points",
]


# --- points read back and rolled up ------------------------------------------------------------
def decode_points(data: bytes | None, point: struct.Struct = POINT) -> list[tuple[int, float]]:
    """(epoch ms, value) pairs of a stored series; a torn tail is ignored."""
    if not data:
        return []
    usable = len(data) - len(data) % point.size
    return [(ts * 1000, value) for ts, value in point.iter_unpack(data[:usable])]


def trim_points(
    points: Sequence[tuple[int, float]], now_ms: int, retention_s: int, max_points: int
) -> list[tuple[int, float]]:
    """The points inside the retention, at most ``max_points`` (newest kept)."""
    cutoff = now_ms - retention_s * 1000
    return [(t, v) for t, v in points if t >= cutoff][-max_points:]


def rollup_value(metric: str, values: Sequence[float]) -> float:
    """One coarse point for a bucket's raw values: MAX of a gauge, LAST of a counter."""
    return values[-1] if point_struct(metric) is COUNTER else max(values)


def tier_points(
    triples: list[tuple[str, str, float]],
    buckets: Mapping[str, int],
    now_ms: int,
    all_tiers: Sequence[Tier],
) -> tuple[dict[str, list[tuple[str, str, float]]], dict[str, int], dict[str, int]]:
    """This pass's points, the new last bucket per coarse tier, and the buckets that closed.

    Raw gets every pass's points. A coarse tier's point for a bucket is rolled up
    from the raw points of that bucket when it closes (the first pass of a later
    bucket): the max of a gauge, the last value of a counter (see
    :func:`rollup_value`). The first pass ever closes nothing.
    """
    points: dict[str, list[tuple[str, str, float]]] = {}
    new_buckets = dict(buckets)
    closed: dict[str, int] = {}
    for tier in all_tiers:
        if tier.bucket_s == 0:
            points[tier.name] = triples
            continue
        bucket = now_ms // 1000 // tier.bucket_s
        previous = new_buckets.get(tier.name)
        if previous != bucket:
            if previous is not None and previous < bucket:
                closed[tier.name] = int(previous)
            new_buckets[tier.name] = bucket
    return points, new_buckets, closed


# --- writing --------------------------------------------------------------------------------------
TAIL = script_for("tail_points", "dashboard.scripts")

# per store client and key prefix: clusters whose index this process refreshed, per
# cluster the index members of the series created since its last pass, and per cluster the
# key names of its series (ConsoleKeys.series_keys: asked again only for a metric not seen)
_State = tuple[set[str], dict[str, set[str]], dict[str, SeriesKeys]]
_CLIENT_STATE: weakref.WeakKeyDictionary[Any, dict[str, _State]] = weakref.WeakKeyDictionary()
# store clients on which this process made sure of the scripts (a fresh store does not have
# them: the first pass's calls would all come back NOSCRIPT and go out again)
_SCRIPTS_LOADED: weakref.WeakSet[Any] = weakref.WeakSet()


class Series:
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

    def pass_points(self, cluster: str, now_ms: int, state: Mapping[str, Any]) -> PassPoints:
        """The sender of a pass's series points (``state``: the previous pass's collector
        state), with the roll-up buckets this pass closes (``rollups``) and the last bucket
        per coarse tier for the next pass's state (``buckets``)."""
        every_pass, buckets, rollups = tier_points([], state.get("buckets") or {}, now_ms, tiers())
        return PassPoints(self, cluster, now_ms, list(every_pass), rollups, buckets)

    def read(
        self, cluster: str, metric: str, entities: Sequence[str], *, since_ms: int, now_ms: int
    ) -> dict[str, list[tuple[int, float]]]:
        """Each entity's points of ``metric`` since ``since_ms`` (:func:`read_series`)."""
        names = self.names(cluster, (metric,))
        got = read_series(self.r, names, metric, entities, since_ms, now_ms)
        return dict(zip(entities, got, strict=True))

    def indexed(self, cluster: str) -> bool:
        """Whether this process already refreshed the series index of ``cluster``."""
        return cluster in self._indexed

    def append_sent(
        self, cluster: str, points: Mapping[str, Triples], now_ms: int, *, index: bool = True
    ) -> Callable[[], Lengths]:
        """Append this pass's points (tier name -> (metric, entity, value) triples) from a
        thread of its own, started now (:func:`~dashboard.store.appends.write_points`); the
        returned function (call it, in a ``finally``) waits for it and gives the series near
        their cap.

        ``index``: also refresh the series index (last write per metric/entity) of every
        series written; without, only the series created since the last pass are indexed.
        """
        self._load_scripts()
        created = self._created.setdefault(cluster, set())
        # created since the pass before: indexed now (if this write fails, by the next refresh
        # as long as they are written)
        members, pending = sorted(created), set() if index else created
        created.clear()
        parts = [(tier, triples, now_ms // 1000) for tier, triples in points.items()]
        wait = self._sent(
            cluster,
            parts,
            index="all" if index else "created",
            score=now_ms,
            created=None if index else pending,
            members=members,
        )

        def lengths() -> Lengths:
            near = wait()
            if index:
                self._indexed.add(cluster)
            return near

        return lengths

    def _sent(
        self, cluster: str, parts: list[tuple[str, Triples, int]], **how: Any
    ) -> Callable[[], Lengths]:
        """:func:`~dashboard.store.appends.write_points` of ``parts`` from a thread of its
        own, started now; the returned function waits for it (its error raises there)."""
        done: list[Lengths] = []
        failed: list[BaseException] = []

        def write() -> None:
            try:
                done.append(write_points(self, cluster, parts, **how))
            except BaseException as exc:  # raised to the caller by the returned function
                failed.append(exc)

        writer = threading.Thread(target=write, name="store-series", daemon=True)
        writer.start()

        def wait() -> Lengths:
            writer.join()
            if failed:
                raise failed[0]
            return done[0]

        return wait

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
        parts: list[tuple[str, Triples, int]] = []
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
            parts.append((name, rolled, lo // 1000))
        return self._sent(cluster, parts)()

    def close_pass(
        self,
        cluster: str,
        raw: Iterable[tuple[str, str, float]],
        rollups: Mapping[str, int] | None,
        lengths: Lengths,
        now_ms: int,
    ) -> None:
        """The end of a pass's series writes (``lengths``: the series its appends left near
        their cap): the roll-ups of the buckets it closed (``rollups``: coarse tier -> bucket,
        from the ``raw`` points), the series past their cap rewritten, vanished ones dropped."""
        if rollups:
            lengths = {**lengths, **self.rollup(cluster, [(m, e) for m, e, _ in raw], rollups)}
        trim_over_cap(self.r, lengths, now_ms)
        forget_vanished(self.r, partial(self.names, cluster), now_ms)

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


class PassPoints:
    """One pass's series points, sent to the store part by part as the pass computes them:
    the store appends each part while the pass goes on (a big deployment's first pass
    creates tens of thousands of series keys). ``points`` gathers every part (tier name ->
    (metric, entity, value) triples) when this pass closes a roll-up bucket, the only use
    :meth:`ConsoleStore.pass_write` has for them (else it stays empty: at 50,000 partitions
    a quarter of a million triples held to the end of the pass for nothing); :meth:`lengths`
    waits for every part's replies and gives the series near their cap. Call it in a
    ``finally``: until then store connections are held with their replies unread. Later
    calls give the same."""

    def __init__(
        self,
        writer: Series,
        cluster: str,
        now_ms: int,
        every_pass: Sequence[str],
        rollups: Mapping[str, int] | None,
        buckets: Mapping[str, int] | None = None,
    ) -> None:
        self._writer, self._cluster, self._now_ms = writer, cluster, now_ms
        self._tiers = tuple(every_pass)
        self.rollups: dict[str, int] = dict(rollups or {})  # coarse tier -> bucket it closes
        self.buckets: dict[str, int] = dict(buckets or {})  # the last bucket per coarse tier
        # the series index: refreshed with the coarsest roll-up (a score ten minutes old is
        # plenty for a horizon of the longest retention) and on a process's first pass; other
        # passes index the series created since the pass before
        self._refresh = tiers()[-1].name in (rollups or {})
        self.points: dict[str, list[tuple[str, str, float]]] = {}
        self._keep = bool(rollups)
        self._waiting: list[Callable[[], Lengths]] = []
        self._lengths: Lengths = {}

    def send(self, triples: Iterable[tuple[str, str, float]]) -> None:
        """Send ``triples`` to each of this pass's tiers now. An iterator is read by the
        store's writer thread as it writes (what it reads must not change meanwhile): a
        quarter of a million triples are then never all held."""
        if self._keep or len(self._tiers) != 1:
            triples = list(triples)
        self.send_tiers(dict.fromkeys(self._tiers, triples))

    def send_tiers(self, part: Mapping[str, Iterable[tuple[str, str, float]]]) -> None:
        """Send ``part`` (tier name -> triples) now; the store appends it meanwhile."""
        for tier, triples in part.items() if self._keep else ():
            self.points.setdefault(tier, []).extend(triples)
        if any(part.values()):
            series = self._writer
            index = self._refresh or not series.indexed(self._cluster)
            self._waiting.append(series.append_sent(self._cluster, part, self._now_ms, index=index))

    def lengths(self) -> Lengths:
        """Wait for every part sent (all of them, even after one failed; the first error
        raises) and give the series near their cap."""
        failed: Exception | None = None
        while self._waiting:
            try:
                self._lengths.update(self._waiting.pop(0)())
            except Exception as exc:  # read the other parts' replies all the same
                failed = failed or exc
        if failed is not None:
            raise failed
        return self._lengths


# --- retention ------------------------------------------------------------------------------------
VANISHED_PER_PASS = 500  # index members (x every tier's series) dropped per pass at most


def trim_over_cap(
    client: redis.Redis, lengths: Mapping[str, tuple[int, Tier, struct.Struct]], now_ms: int
) -> None:
    """Rewrite the series (of ``lengths``: key -> bytes, tier, format) past their cap
    with only the points inside their retention.

    Series are read and written back :data:`BULK_PER_EXECUTE`
    at a time; one round trip writes a batch and reads the next.
    """
    limits: dict[tuple[Tier, struct.Struct], tuple[int, int]] = {}
    over: list[tuple[str, Tier, int, struct.Struct]] = []
    for key, (length, tier, point) in lengths.items():
        limit = limits.get((tier, point))
        if limit is None:
            limit = limits[tier, point] = tier_limits(tier, point)
        if length >= limit[1]:
            over.append((key, tier, limit[0], point))
    writes: list[Command] = []
    for batch in chunks(over, BULK_PER_EXECUTE):
        cmds = writes + [("GET", key) for key, _, _, _ in batch]
        replies = run_batched(client, cmds, per_execute=len(cmds), translate=False)
        _raise_first(replies)
        writes = []
        for (key, tier, max_points, point), data in zip(batch, replies[-len(batch) :], strict=True):
            # the points trim_points keeps, as they are stored (each by its place in the series)
            places = [(t, float(i)) for i, (t, _) in enumerate(decode_points(data, point))]
            kept = [int(i) for _, i in trim_points(places, now_ms, tier.retention_s, max_points)]
            size = point.size
            writes.append(("SET", key, b"".join(data[i * size : (i + 1) * size] for i in kept)))
    if writes:
        _raise_first(run_batched(client, writes, per_execute=len(writes), translate=False))


def _raise_first(replies: list[Any]) -> None:
    error = first_error(replies)
    if error is not None:
        raise error


def forget_vanished(
    client: Any, names_of: Callable[[Iterable[str]], SeriesKeys], now_ms: int
) -> None:
    """Drop the series (all tiers) of entities not written for longer than the longest
    retention, at most :data:`VANISHED_PER_PASS` index members per call, in one transaction
    (``names_of``: the cluster's series key names with those of some metrics,
    :meth:`Series.names`)."""
    horizon = now_ms - max(t.retention_s for t in tiers()) * 1000
    names = names_of(())
    stale = client.zrangebyscore(names.index, "-inf", horizon, start=0, num=VANISHED_PER_PASS)
    if not stale:
        return
    entries = [member.decode().split(names.separator, 1) for member in stale]
    names = names_of({metric for metric, _ in entries})
    pipe = client.pipeline(transaction=True)
    for metric, entity in entries:
        for tier in TIERS:
            pipe.delete(names.prefix[tier, metric] + entity)
    pipe.zrem(names.index, *stale)
    pipe.execute()


# --- reading --------------------------------------------------------------------------------------
def read_series(
    client: Any,
    names: SeriesKeys,
    metric: str,
    entities: Sequence[str],
    since_ms: int,
    now_ms: int,
) -> list[list[tuple[int, float]]]:
    """Points since ``since_ms`` of each entity's series, from the finest tier covering it.

    A coarse tier only has the buckets that closed; the raw points after its
    last bucket (the open one) are appended, so charts reach the present.
    Redis errors are raised as redis-py raises them.
    """
    tier = tier_for(since_ms, now_ms, tiers())
    point = point_struct(metric)
    interval = max(1, int(settings.COLLECT_INTERVAL_S))
    tail = 0
    if tier.bucket_s:
        tail = (2 * tier.bucket_s // interval + 2) * point.size
    # only the window's bytes (twice the points its cadence gives, for passes that came
    # early); a series whose read came back full and still starts inside the window is
    # read whole below. A 1-hour sparkline then reads 1 hour, not the day of raw points.
    window = (2 * max(0, now_ms - since_ms) // 1000 // (tier.bucket_s or interval) + 4) * point.size
    cmds: list[Command] = []
    prefix, raw_prefix = names.prefix[tier.name, metric], names.prefix["raw", metric]
    for entity in entities:
        cmds.append(("GETRANGE", prefix + entity, -window, -1))
        if tail:
            cmds.append(("GETRANGE", raw_prefix + entity, -tail, -1))
    replies = _run(client, cmds)
    step = 2 if tail else 1
    short = [
        i
        for i in range(0, len(replies), step)
        if len(replies[i] or b"") >= window
        and (pts := decode_points(replies[i][: point.size], point))
        and pts[0][0] > since_ms
    ]
    if short:
        whole = _run(client, [("GET", cmds[i][1]) for i in short])
        for i, data in zip(short, whole, strict=True):
            replies[i] = data
    out = []
    for i in range(0, len(replies), step):
        pts = decode_points(replies[i], point)
        if tail:
            after = pts[-1][0] + tier.bucket_s * 1000 if pts else -1
            pts += [(t, v) for t, v in decode_points(replies[i + 1], point) if t >= after]
        out.append([(t, v) for t, v in pts if t >= since_ms])
    return out


def _run(client: Any, cmds: list[Command]) -> list[Any]:
    replies = run_batched(client, cmds, per_execute=BULK_PER_EXECUTE, translate=False)
    error = first_error(replies)
    if error is not None:
        raise error
    return replies
