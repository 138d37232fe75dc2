"""The console store of one Redis client and key prefix: what pages read, what a pass writes.

One collector pass writes its series points first (:mod:`dashboard.store.series_write`),
then everything else in one MULTI/EXEC, so a worker killed mid-pass leaves the
previous pass intact (at most this pass's points without its snapshot) and the
next pass restores everything.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

import msgspec
import redis
from django.conf import settings

from dashboard.store import values
from dashboard.store.batches import WHAT
from dashboard.store.incidents import IncidentPage, incidents_commands, incidents_read
from dashboard.store.keys import ConsoleKeys
from dashboard.store.pieces import read_pieces
from dashboard.store.points import tier_points, tiers
from dashboard.store.retention import forget_vanished, trim_over_cap
from dashboard.store.series_read import read_series
from dashboard.store.series_write import Lengths, SeriesWriter
from mqcore.clock import now_ms
from mqcore.models import (
    ClusterSnapshot,
    snapshot_decode,
    snapshot_encode,
    snapshot_encode_parts,
)
from mqcore.wire import Chunked, Command, Wire

__all__ = ["ConsoleStore", "OpenPass", "PassPoints", "SnapshotRead"]

log = logging.getLogger(__name__)

CHUNKED_TOPICS = 2_000  # topics from which a snapshot's JSON is sent in parts (about 10 MB)


class SnapshotRead(NamedTuple):
    """The stored snapshot of a cluster: ``snapshot`` (None before the first pass or when
    refused) and ``unreadable``, why a stored value was refused (None: it was not)."""

    snapshot: ClusterSnapshot | None
    unreadable: str | None


class ConsoleStore:
    """Reads and writes of the console store for one Redis client and key prefix."""

    def __init__(self, client: redis.Redis, keys: ConsoleKeys) -> None:
        self.r: Any = client  # bytes replies
        self.keys = keys
        self.series = SeriesWriter(client, keys)

    # --- reads --------------------------------------------------------------
    def snapshot_get(self, cluster: str) -> ClusterSnapshot | None:
        """The latest snapshot; None before the first pass or when refused (see below)."""
        return self.snapshot_read(cluster).snapshot

    def snapshot_read(self, cluster: str) -> SnapshotRead:
        """The latest snapshot, decoded and validated once per version per process (shared:
        do not change it), or why the stored value was refused.

        A page reads it on every request: decoding the 2 MB snapshot of 1,000 topics costs
        tens of milliseconds, its version a few bytes. A value that is not a snapshot (see
        :func:`mqcore.models.snapshot_decode`) is refused at its decode, once per version.
        """
        key, version_key = self.keys.snapshot(cluster), self.keys.snapshot_version(cluster)
        slot = ("snapshot", key)
        cached = values.versioned_get(slot, self.r.get(version_key))
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        version, (raw,) = read_pieces(self.r, [key], version_key)
        try:
            read = SnapshotRead(snapshot_decode(raw) if raw else None, None)
        except msgspec.MsgspecError as exc:
            log.warning("console store: the snapshot of %s is unreadable: %s", cluster, exc)
            read = SnapshotRead(None, str(exc))
        values.versioned_put(slot, version, read)
        return read

    def series_get(
        self,
        cluster: str,
        metric: str,
        entity: str,
        *,
        since_ms: int,
        until_ms: int | None = None,
    ) -> list[tuple[int, float]]:
        now = now_ms()
        until = until_ms if until_ms is not None else now + 3_600_000
        got = read_series(self.r, self.keys, cluster, metric, [entity], since_ms, now)[0]
        return [(t, v) for t, v in got if t <= until]

    def series_many(
        self, cluster: str, metric: str, entities: Sequence[str], *, since_ms: int
    ) -> dict[str, list[tuple[int, float]]]:
        now = now_ms()
        got = read_series(self.r, self.keys, cluster, metric, entities, since_ms, now)
        return dict(zip(entities, got, strict=True))

    def incidents_get(self, cluster: str, **query: Any) -> IncidentPage:
        """Stored incident events, newest first (see :func:`incidents_read` for ``query``)."""
        return incidents_read(self.r, self.keys, cluster, **query)

    def lease_timeline_get(
        self, cluster: str, topic: str, *, limit: int = 200
    ) -> list[dict[str, Any]]:
        """The lease events of ``topic`` (newest first) in the lease timeline's row shape."""
        page = self.incidents_get(
            cluster, topic=topic, limit=limit, match=lambda e: e.get("kind") == "lease"
        )
        return [_lease_row(e) for e in page.events]

    def collector_health_get(self) -> dict[str, dict[str, Any]]:
        raw = self.r.hgetall(self.keys.collector_health())
        return {k.decode(): json.loads(v) for k, v in raw.items()}

    def alerts_list(
        self, clusters: Sequence[str], *, include_resolved: bool = False
    ) -> list[dict[str, Any]]:
        pipe = self.r.pipeline(transaction=False)
        for cluster in clusters:
            pipe.hvals(self.keys.alerts(cluster))
            if include_resolved:
                pipe.lrange(self.keys.alert_history(cluster), 0, -1)
        replies = pipe.execute()
        open_alerts: list[dict[str, Any]] = []
        resolved: list[dict[str, Any]] = []
        step = 2 if include_resolved else 1
        for i in range(0, len(replies), step):
            open_alerts.extend(json.loads(v) for v in replies[i])
            if include_resolved:
                resolved.extend(json.loads(v) for v in replies[i + 1])
        open_alerts.sort(key=lambda a: (a["severity"] != "critical", -int(a["opened_at_ms"])))
        resolved.sort(key=lambda a: -int(a.get("resolved_at_ms") or 0))
        return open_alerts + resolved

    def mutes_get(self, cluster: str, alert_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The stored silences/acknowledgements of ``alert_ids`` (MGET in chunks of 500)."""
        ids = list(dict.fromkeys(alert_ids))
        found: dict[str, dict[str, Any]] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            raws = self.r.mget([self.keys.alert_mute(cluster, i) for i in chunk])
            for alert_id, raw in zip(chunk, raws, strict=True):
                value = values.loads(raw)
                if isinstance(value, dict):
                    found[alert_id] = value
        return found

    def mute_put(self, cluster: str, alert_id: str, mute: Mapping[str, Any], ttl_s: int) -> None:
        """Store a silence/acknowledgement of ``alert_id`` expiring after ``ttl_s`` (replaces)."""
        self.r.set(self.keys.alert_mute(cluster, alert_id), values.dumps(mute), ex=int(ttl_s))

    def mute_delete(self, cluster: str, alert_id: str) -> bool:
        """Lift the silence/acknowledgement of ``alert_id``; False when there was none."""
        return bool(self.r.delete(self.keys.alert_mute(cluster, alert_id)))

    # --- collector side -----------------------------------------------------
    def slot_claim(self, cluster: str, slot: int, token: str, ttl_s: int) -> bool:
        """Claim (cluster, slot) for ``token``; True also when ``token`` already holds it.

        A re-run of the same task (same token) may proceed; once the pass has
        written, the claim says ``done`` and nobody writes that slot again.
        """
        key = self.keys.slot_claim(cluster, slot)
        if self.r.set(key, token, nx=True, ex=ttl_s):
            return True
        holder = self.r.get(key)
        return holder is not None and holder.decode() == token

    def pass_open(
        self,
        cluster: str,
        *,
        now_ms: int,
        claim: tuple[int, str, int] | None,
        gather_when_claimed: bool = False,
    ) -> OpenPass | None:
        """The start of a pass: ``claim`` (slot, token, seconds) the slot (:meth:`slot_claim`;
        None: no claim), the previous pass's state (:meth:`state_get`), the roll-up buckets
        this pass closes and the sender of its series points (None: another run holds the
        slot and, with ``gather_when_claimed``, the pass writes nothing; without, no pass:
        None)."""
        mine = claim is None or self.slot_claim(cluster, *claim)
        if not mine and not gather_when_claimed:
            return None
        previous = self.state_get(cluster)
        every_pass, buckets, rollups = tier_points(
            [], previous["state"].get("buckets") or {}, now_ms, tiers()
        )
        points = (
            self.points_sender(cluster, now_ms, every_pass=list(every_pass), rollups=rollups)
            if mine
            else None
        )
        return OpenPass(previous, points, buckets, rollups)

    def state_get(self, cluster: str) -> dict[str, Any]:
        """Everything a pass needs from the previous one (the big values in pieces).

        The state this process wrote last is not read again while its version stands."""
        keys = self.keys
        pipe = self.r.pipeline(transaction=False)
        pipe.get(keys.collector_state_version(cluster))
        pipe.hget(keys.collector_health(), cluster)
        pipe.hgetall(keys.alerts(cluster))
        version, health, alerts = pipe.execute()
        written = values.versioned_get(("state", cluster), version)
        if written is None:
            _v, (state, lease_state) = read_pieces(
                self.r, [keys.collector_state(cluster), keys.lease_state(cluster)],
                keys.collector_state_version(cluster),
            )  # fmt: skip
            written = (
                values.loads_cached(("state", cluster), state),
                values.loads_cached(("lease", cluster), lease_state),
            )
        return {
            "state": dict(written[0] or {}),
            "lease_state": written[1],
            "health": values.loads(health) or {},
            "alerts": {k.decode(): json.loads(v) for k, v in alerts.items()},
        }

    def pass_write(
        self,
        cluster: str,
        *,
        now_ms: int,
        snapshot: ClusterSnapshot | None,
        state: Mapping[str, Any],
        lease_state: Mapping[str, Any] | None,
        incidents: Sequence[Mapping[str, Any]],
        points: Mapping[str, Sequence[tuple[str, str, float]]],
        health: Mapping[str, Any],
        alerts_open: Mapping[str, dict[str, Any]],
        alerts_resolved: Sequence[dict[str, Any]],
        slot: int | None,
        rollups: Mapping[str, int] | None = None,
        appended: Callable[[], Lengths] | None = None,
        mutes_of: Sequence[str] = (),
    ) -> dict[str, dict[str, Any]]:
        """Write one pass: series points first, then everything else in one MULTI/EXEC;
        return the silences and acknowledgements of the alert ids ``mutes_of`` (the alerts
        this pass opened or resolved: :meth:`mutes_get`).

        ``incidents`` are this pass's incident events (:mod:`dashboard.store.incidents`).
        ``points`` maps a tier name to (metric, entity, value) triples for this pass.
        ``rollups`` maps a coarse tier to the bucket (index) that closed with this
        pass: the raw points of that bucket of every series in ``points["raw"]``
        become one point of the tier (see :func:`dashboard.store.rollup_value`).
        The snapshot's JSON goes out in parts as it is encoded (:class:`mqcore.wire.Chunked`).
        A worker killed in between leaves at most this pass's points without its snapshot;
        the claim is marked done only with the snapshot. ``appended``: these
        ``points`` already sent: the ``lengths`` of a :class:`PassPoints` that sent them.
        A lost connection while writing the points raises
        :class:`mqcore.errors.ConnectionLostError`.
        """
        keys = self.keys
        history_max = int(settings.ALERT_HISTORY_MAX)
        if appended is None:
            sender = self.points_sender(cluster, now_ms, every_pass=(), rollups=rollups)
            sender.send_tiers(points)
            appended = sender.lengths
        try:  # the store runs the series writes while this process encodes the values
            snapshot_arg = _parts(snapshot) if snapshot is not None else None
            state_raw = values.dumps(state)
            lease_raw = values.dumps(lease_state) if lease_state is not None else b""
        finally:
            lengths = appended()
        if rollups:
            raw = points.get("raw") or ()
            lengths.update(self.series.rollup(cluster, [(m, e) for m, e, _ in raw], rollups))
        version = _version(now_ms)
        cmds: list[Command] = []
        if snapshot_arg is not None:
            cmds.append(("SET", keys.snapshot(cluster), snapshot_arg))
            cmds.append(("SET", keys.snapshot_version(cluster), version))
        cmds.append(("SET", keys.collector_state(cluster), state_raw))
        if lease_state is not None:
            cmds.append(("SET", keys.lease_state(cluster), lease_raw))
        cmds.append(("SET", keys.collector_state_version(cluster), version))
        cmds += incidents_commands(keys, cluster, incidents, now_ms)
        cmds.append(("HSET", keys.collector_health(), cluster, values.dumps(health)))
        cmds += _alerts_commands(keys, cluster, alerts_open, alerts_resolved, history_max)
        if slot is not None:
            cmds.append(("SET", keys.slot_claim(cluster, slot), "done", "XX", "KEEPTTL"))
        Wire(self.r, 1, WHAT).transaction(cmds)
        values.remember(("state", cluster), state_raw, state)
        if lease_state is not None:
            values.remember(("lease", cluster), lease_raw, lease_state)
            values.versioned_put(("state", cluster), version.encode(), (state, lease_state))
        else:  # the lease state stored is an older one
            values.versioned_put(("state", cluster), None, None)
        trim_over_cap(self.r, lengths, now_ms)
        forget_vanished(self.r, keys, cluster, now_ms)
        return self.mutes_get(cluster, mutes_of) if mutes_of else {}

    def points_sender(
        self,
        cluster: str,
        now_ms: int,
        *,
        every_pass: Sequence[str] = ("raw",),
        rollups: Mapping[str, int] | None = None,
    ) -> PassPoints:
        """A pass's series points for the tiers named in ``every_pass``, sent in parts as the
        pass computes them (see :class:`PassPoints`); pass its ``points`` and ``lengths`` to
        :meth:`pass_write`."""
        return PassPoints(self, cluster, now_ms, every_pass, rollups)

    def health_write(self, cluster: str, health: Mapping[str, Any]) -> None:
        self.r.hset(self.keys.collector_health(), cluster, values.dumps(health))

    def alerts_write(
        self,
        cluster: str,
        alerts_open: Mapping[str, dict[str, Any]],
        alerts_resolved: Sequence[dict[str, Any]],
        state: Mapping[str, Any],
        incidents: Sequence[Mapping[str, Any]] = (),
        written_ms: int | None = None,
    ) -> None:
        """Alert state (and incident events) of a failed pass (no snapshot), in one transaction."""
        keys = self.keys
        at = written_ms if written_ms is not None else now_ms()
        cmds = incidents_commands(keys, cluster, incidents, at) if incidents else []
        history_max = int(settings.ALERT_HISTORY_MAX)
        cmds += _alerts_commands(keys, cluster, alerts_open, alerts_resolved, history_max)
        cmds.append(("SET", keys.collector_state(cluster), values.dumps(state)))
        cmds.append(("SET", keys.collector_state_version(cluster), _version(at)))
        Wire(self.r, 1, WHAT).transaction(cmds)
        values.versioned_put(("state", cluster), None, None)


def _alerts_commands(
    keys: ConsoleKeys,
    cluster: str,
    alerts_open: Mapping[str, dict[str, Any]],
    alerts_resolved: Sequence[dict[str, Any]],
    history_max: int,
) -> list[Command]:
    """The open alerts in place of the stored ones, the resolved ones onto the history."""
    alerts_key, history_key = keys.alerts(cluster), keys.alert_history(cluster)
    cmds: list[Command] = [("DEL", alerts_key)]
    if alerts_open:
        cmds.append(
            ("HSET", alerts_key, *[x for k, v in alerts_open.items() for x in (k, values.dumps(v))])
        )
    if alerts_resolved:
        cmds.append(("LPUSH", history_key, *[values.dumps(a) for a in alerts_resolved]))
        cmds.append(("LTRIM", history_key, 0, history_max - 1))
    return cmds


def _parts(value: ClusterSnapshot) -> bytes | Chunked:
    """The snapshot's JSON (the structs encoded by msgspec); a big one (:data:`CHUNKED_TOPICS`
    topics and more) in parts, encoded once now to know their lengths and again as the
    transaction sends them: the 52 MB of a 50,000-partition snapshot are never held whole
    (the second encoding costs 60-80 ms there; a small snapshot is encoded once)."""
    if len(value.topics) < CHUNKED_TOPICS:
        return snapshot_encode(value)
    make = partial(snapshot_encode_parts, value)
    return Chunked(tuple(len(part) for part in make()), make)


def _version(now_ms: int) -> str:
    """A new version for values written together (read back by :func:`read_pieces`)."""
    return f"{now_ms}:{os.urandom(6).hex()}"


def _lease_row(e: Mapping[str, Any]) -> dict[str, Any]:
    data = e.get("data")
    extra: dict[str, Any] = dict(data) if isinstance(data, Mapping) else {}
    return {
        "at_ms": e.get("at_ms"),
        "group": e.get("group"),
        "partition": e.get("partition"),
        **extra,
    }


@dataclass
class OpenPass:
    """A pass begun (:meth:`ConsoleStore.pass_open`)."""

    previous: dict[str, Any]  # state, lease_state, health, alerts (:meth:`ConsoleStore.state_get`)
    points: PassPoints | None  # its series points' sender; None: nothing is written
    buckets: dict[str, int]  # the last bucket per coarse tier, for the next pass's state
    rollups: dict[str, int]  # coarse tier -> the bucket this pass closes


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
        store: ConsoleStore,
        cluster: str,
        now_ms: int,
        every_pass: Sequence[str],
        rollups: Mapping[str, int] | None,
    ) -> None:
        self._store, self._cluster, self._now_ms = store, cluster, now_ms
        self._tiers = tuple(every_pass)
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
            series = self._store.series
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
