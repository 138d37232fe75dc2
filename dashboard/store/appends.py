"""The writer thread of the console store's series: a pass's points as calls of
``dashboard/scripts/append_points.lua`` (:data:`APPEND`), sent a round trip at a time as
they fill (:func:`write_points`).

One call APPENDs one point to each of up to :data:`~dashboard.store.batches.MEMBERS_PER_COMMAND`
series of one tier and point format (their points packed back to back in one argument) and
answers the new lengths of the series that reached their cap. The next round trip
(:data:`~dashboard.store.batches.BULK_PER_EXECUTE` calls) is built while Redis works
through the last one, and a round trip's keys and values are let go once its replies are
read: at 50,000 partitions that is a quarter of a million keys that are never all held at
once. :class:`dashboard.store.series.Series` runs it from a thread of its own while the
pass goes on (:meth:`~dashboard.store.series.Series.append_sent`), and for the roll-ups.
"""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from dashboard.store.batches import BULK_PER_EXECUTE, MEMBERS_PER_COMMAND, WHAT, chunks
from dashboard.store.keys import SeriesKeys
from dashboard.store.points import Lengths, Tier, pack_points, point_struct, tier_limits, tiers
from mqcore.scripts import script_for
from mqcore.wire import Command, Wire

__all__ = ["APPEND", "RoundTrips", "Triples", "Writer", "write_points"]

APPEND = script_for("append_points", "dashboard.scripts")

Triples = Iterable[tuple[str, str, float]]


class Writer(Protocol):
    """What the calls need of :class:`dashboard.store.series.Series`."""

    r: Any

    def names(self, cluster: str, metrics: Iterable[str] = ()) -> SeriesKeys: ...

    def replies(self, cmds: list[Command], replies: list[Any]) -> list[Any]: ...


def write_points(
    writer: Writer,
    cluster: str,
    parts: Iterable[tuple[str, Triples, int]],
    *,
    index: str = "none",
    score: int = 0,
    created: set[str] | None = None,
    members: Sequence[str] = (),
) -> Lengths:
    """Every part (tier name, (metric, entity, value) triples, stamp in epoch s) as script
    calls, then the ZADDs of the index ``members``; the series near their cap. ``index``,
    ``score``, ``created``: see :class:`RoundTrips`. NaN and None values are skipped."""
    trips = RoundTrips(writer, cluster, index=index, score=score, created=created)
    try:
        for tier_name, triples, stamp in parts:
            _calls(trips, tier_name, triples, stamp)
        return trips.finish(_index_commands(trips.names.index, members, score))
    except BaseException:
        trips.abandon()
        raise


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


class RoundTrips:
    """Script calls sent a round trip at a time as they fill, the next one written before
    the last one's replies are read; each round trip's calls are let go with its replies.

    ``index``: the mode the script is asked for (``all``, ``created`` or ``none``);
    ``created`` gathers the index members of the keys the calls created."""

    def __init__(
        self,
        writer: Writer,
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


def _calls(trips: RoundTrips, tier_name: str, triples: Triples, stamp: int) -> None:
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
            prefix = trips.writer.names(trips.cluster, (metric,)).prefix[tier_name, metric]
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


def _index_commands(index_key: str, members: Iterable[str], score: int) -> list[Command]:
    """ZADDs of the index ``members`` at ``score``, at most a command's members each."""
    cmds: list[Command] = []
    for part in chunks(list(members)):
        scored: list[Any] = [score] * (2 * len(part))
        scored[1::2] = part
        cmds.append(("ZADD", index_key, *scored))
    return cmds
