"""Writing series points: this pass's APPENDs, the series index and bucket roll-ups.

Points go out through ``dashboard/scripts/append_points.lua``: one call APPENDs
one point to each of up to :data:`~dashboard.store.batches.MEMBERS_PER_COMMAND`
series of one tier and point format (their points packed back to back in one
argument) and answers the new lengths of the series that reached their cap: the
series that outgrew their retention (see :func:`dashboard.store.retention.trim_over_cap`).
The series index (a sorted set of ``metric<US>entity`` scored by the last write)
lets series of vanished entities be deleted
(:func:`dashboard.store.retention.forget_vanished`). A pass that does not refresh it
asks the script for the keys it created as well, and the next pass indexes their
series; a refresh (every member, in ZADDs of at most as many members) comes with the
coarsest roll-up and a process's first pass.
A roll-up reads the raw tails it needs through ``dashboard/scripts/tail_points.lua``,
as many series per call.
"""

from __future__ import annotations

import struct
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis
from django.conf import settings

from dashboard.store.batches import (
    BULK_PER_EXECUTE,
    MEMBERS_PER_COMMAND,
    WHAT,
    chunks,
    run_batched,
    send_batched,
)
from dashboard.store.keys import ConsoleKeys
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
from mqcore.wire import Command

__all__ = ["Lengths", "SeriesWriter", "index_entry", "index_member"]

_SCRIPTS = Path(__file__).parent.parent / "scripts"
APPEND_LUA = (_SCRIPTS / "append_points.lua").read_text()
TAIL_LUA = (_SCRIPTS / "tail_points.lua").read_text()
_SEP = "\x1f"
_KEY_CACHE_MAX = 200_000  # series key strings remembered per (cluster, tier, metric)

# series key -> (bytes after this pass, tier, point format), for the series near their cap
Lengths = dict[str, tuple[int, Tier, struct.Struct]]

# per store client and key prefix: series key strings per (cluster, tier), clusters indexed,
# series created since the last pass per cluster
_Caches = tuple[dict[Any, Any], set[str], dict[str, set[str]]]
_CLIENT_CACHES: weakref.WeakKeyDictionary[Any, dict[str, _Caches]] = weakref.WeakKeyDictionary()
# store clients on which this process made sure of the scripts (a fresh store does not have
# them: the first pass's calls would all come back NOSCRIPT and go out again)
_SCRIPTS_LOADED: weakref.WeakSet[Any] = weakref.WeakSet()


@dataclass(frozen=True, slots=True)
class _Group:
    """Points of one tier and point format, all stamped ``stamp`` (epoch s): ``values[i]``
    goes to ``keys[i]``."""

    tier: Tier
    point: struct.Struct
    stamp: int
    keys: list[str]
    values: list[float]


def index_member(metric: str, entity: str) -> str:
    """The series index member of (metric, entity)."""
    return f"{metric}{_SEP}{entity}"


def index_entry(member: bytes) -> tuple[str, str]:
    """(metric, entity) of a series index member."""
    metric, entity = member.decode().split(_SEP, 1)
    return metric, entity


class SeriesWriter:
    """Appends points to the series of one store client and key prefix."""

    def __init__(self, client: redis.Redis, keys: ConsoleKeys) -> None:
        self.r = client
        self.keys = keys
        self._append_sha: str = client.register_script(APPEND_LUA).sha
        self._tail_sha: str = client.register_script(TAIL_LUA).sha
        # per client, not per writer: the collector makes a store per pass
        per_client = _CLIENT_CACHES.get(client)
        if per_client is None:
            per_client = _CLIENT_CACHES[client] = {}
        caches = per_client.setdefault(keys.prefix, ({}, set(), {}))
        # (cluster, tier) -> metric -> entity -> series key
        self._series_keys: dict[tuple[str, str], dict[str, dict[str, str]]] = caches[0]
        self._indexed: set[str] = caches[1]  # clusters whose series index was refreshed
        # cluster -> index members of the series created since, for the next pass to index
        self._created: dict[str, set[str]] = caches[2]

    def indexed(self, cluster: str) -> bool:
        """Whether this process already refreshed the series index of ``cluster``."""
        return cluster in self._indexed

    def series_key(self, cluster: str, tier: str, metric: str, entity: str) -> str:
        by_entity = self._keys_of(cluster, tier, metric)
        key = by_entity.get(entity)
        if key is None:
            key = by_entity[entity] = self.keys.series(cluster, tier, metric, entity)
        return key

    def _keys_of(self, cluster: str, tier: str, metric: str) -> dict[str, str]:
        """The series keys remembered for ``metric`` (entity -> key), a bounded cache."""
        by_entity = self._series_keys.setdefault((cluster, tier), {}).setdefault(metric, {})
        if len(by_entity) > _KEY_CACHE_MAX:
            by_entity.clear()
        return by_entity

    def append(
        self,
        cluster: str,
        points: Mapping[str, Sequence[tuple[str, str, float]]],
        now_ms: int,
        *,
        index: bool = True,
    ) -> Lengths:
        """Append this pass's points (tier name -> (metric, entity, value) triples).

        ``index``: also refresh the series index (last write per metric/entity) of every
        series written; without, only the series created since the last pass are indexed.
        NaN and None values are skipped.
        """
        return self.append_sent(cluster, points, now_ms, index=index)()

    def append_sent(
        self,
        cluster: str,
        points: Mapping[str, Sequence[tuple[str, str, float]]],
        now_ms: int,
        *,
        index: bool = True,
    ) -> Callable[[], Lengths]:
        """:meth:`append`, its first round trip written now: the returned function (call
        it, in a ``finally``) waits for the writes and returns what :meth:`append` does."""
        tier_map = {t.name: t for t in tiers()}
        stamp = now_ms // 1000
        groups: list[_Group] = []
        members: list[str] = []
        for tier_name, triples in points.items():
            tier = tier_map[tier_name]
            by_point: dict[struct.Struct, _Group] = {}
            # metric -> (add a key, add a value, its keys per entity), per tier
            by_metric: dict[
                str, tuple[Callable[[str], None], Callable[[float], None], dict[str, str]]
            ] = {}
            for metric, entity, value in triples:
                if value is None or value != value:  # NaN
                    continue
                adds = by_metric.get(metric)
                if adds is None:
                    point = point_struct(metric)
                    group = by_point.get(point)
                    if group is None:
                        group = by_point[point] = _Group(tier, point, stamp, [], [])
                        groups.append(group)
                    by_entity = self._keys_of(cluster, tier_name, metric)
                    adds = by_metric[metric] = (group.keys.append, group.values.append, by_entity)
                add_key, add_value, by_entity = adds
                key = by_entity.get(entity)
                if key is None:
                    key = by_entity[entity] = self.keys.series(cluster, tier_name, metric, entity)
                add_key(key)
                add_value(value)
                if index:
                    members.append(index_member(metric, entity))
        created = self._created.setdefault(cluster, set())
        # created since the pass before: indexed now (if this write fails, by the next refresh
        # as long as they are written)
        members += created
        created.clear()
        # from a thread: the store works through every round trip while the pass goes on
        written = self._write_sent(
            groups, members, cluster, now_ms, background=True, created=None if index else created
        )

        def lengths() -> Lengths:
            done = written()
            if index:
                self._indexed.add(cluster)
            return done

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
        longest = max(tier_map[name].bucket_s for name in closed)
        n = longest // interval + 2  # raw points that can fall into the longest bucket
        raw_keys = [self.series_key(cluster, "raw", m, e) for m, e in series]
        starts = [-n * point_struct(m).size for m, _ in series]
        cmds: list[Command] = [
            ("EVALSHA", self._tail_sha, len(keys), *keys, *args)
            for keys, args in zip(chunks(raw_keys), chunks(starts), strict=True)
        ]
        tails = [tail for reply in self._run(cmds) for tail in reply]
        groups: dict[tuple[str, struct.Struct], _Group] = {}
        for name, bucket in closed.items():
            tier = tier_map[name]
            lo, hi = bucket * tier.bucket_s * 1000, (bucket + 1) * tier.bucket_s * 1000
            for (metric, entity), tail in zip(series, tails, strict=True):
                if not tail:
                    continue
                point = point_struct(metric)
                values = [v for t, v in decode_points(tail, point) if lo <= t < hi]
                if values:
                    group = groups.get((name, point))
                    if group is None:
                        group = groups[name, point] = _Group(tier, point, lo // 1000, [], [])
                    group.keys.append(self.series_key(cluster, name, metric, entity))
                    group.values.append(rollup_value(metric, values))
        return self._write_sent(list(groups.values()), [], cluster, 0)()

    def _write_sent(
        self,
        groups: Sequence[_Group],
        members: list[str],
        cluster: str,
        now_ms: int,
        *,
        background: bool = False,
        created: set[str] | None = None,
    ) -> Callable[[], Lengths]:
        """APPEND each group's points to its keys and index ``members`` (first round trip
        written now; every round trip from a thread with ``background``: see
        :func:`~dashboard.store.batches.send_batched`); the returned function gives the
        series near their cap and adds the index members of the keys the writes created
        to ``created``, when given."""
        sha = self._append_sha
        cmds: list[Command] = []
        calls: list[tuple[_Group, int]] = []  # per script call: its group, its first key
        report = 0 if created is None else 1  # the script reports the keys it creates
        for group in groups:
            size, floor = group.point.size, tier_limits(group.tier, group.point)[1]
            for start in range(0, len(group.keys), MEMBERS_PER_COMMAND):
                keys = group.keys[start : start + MEMBERS_PER_COMMAND]
                values = group.values[start : start + MEMBERS_PER_COMMAND]
                blob = pack_points(group.point, group.stamp, values)
                cmds.append(("EVALSHA", sha, len(keys), *keys, blob, size, floor, report))
                calls.append((group, start))
        index_key = self.keys.series_index(cluster)
        for part in chunks(list(dict.fromkeys(members))):
            scored: list[Any] = [now_ms] * (2 * len(part))
            scored[1::2] = part
            cmds.append(("ZADD", index_key, *scored))
        if not cmds:
            return lambda: {}
        sent = self._sent(cmds, background=background)

        def lengths() -> Lengths:
            replies = sent()
            near: Lengths = {}
            for (group, start), reply in zip(calls, replies, strict=False):
                keys, tier, point = group.keys, group.tier, group.point
                for j in range(0, len(reply), 2):
                    key, length = keys[start + reply[j] - 1], reply[j + 1]
                    if length == point.size and created is not None:  # a new series
                        created.add(index_member(*self.keys.series_entry(cluster, tier.name, key)))
                    else:
                        near[key] = (length, tier, point)
            return near

        return lengths

    def _run(self, cmds: list[Command]) -> list[Any]:
        return self._sent(cmds)()

    def _sent(self, cmds: list[Command], *, background: bool = False) -> Callable[[], list[Any]]:
        """Run the commands, :data:`BULK_PER_EXECUTE` per round trip, the first written now
        (the returned function gives the replies); scripts the store forgot (restart,
        flush) are loaded and their calls rerun. Error replies raise."""
        if self.r not in _SCRIPTS_LOADED:
            with redis_errors(WHAT):
                known = self.r.script_exists(self._append_sha, self._tail_sha)
                for script, loaded in zip((APPEND_LUA, TAIL_LUA), known, strict=True):
                    if not loaded:
                        self.r.script_load(script)
            _SCRIPTS_LOADED.add(self.r)
        sent = send_batched(self.r, cmds, per_execute=BULK_PER_EXECUTE, background=background)
        return lambda: self._replies(cmds, sent())

    def _replies(self, cmds: list[Command], replies: list[Any]) -> list[Any]:
        missing = [i for i, reply in enumerate(replies) if _noscript(reply)]
        if missing:
            with redis_errors(WHAT):
                self.r.script_load(APPEND_LUA)
                self.r.script_load(TAIL_LUA)
            again = run_batched(self.r, [cmds[i] for i in missing], per_execute=BULK_PER_EXECUTE)
            for i, reply in zip(missing, again, strict=True):
                replies[i] = reply
        for reply in replies:
            if isinstance(reply, Exception):
                raise reply
        return replies


def _noscript(reply: Any) -> bool:
    return isinstance(reply, redis.exceptions.NoScriptError)
