"""The console store of one Redis client and key prefix (:class:`ConsoleStore`): what pages
read, what a pass writes; here its latest values (snapshot, collector state, health,
alerts, silences), the series in :mod:`.series`, the timeline in :mod:`.incidents`.

One collector pass writes its series points first (:mod:`dashboard.store.series`),
then everything else in one MULTI/EXEC, so a worker killed mid-pass leaves the
previous pass intact (at most this pass's points without its snapshot) and the
next pass restores everything.

Big values are read in pieces (:func:`read_pieces`): a snapshot of 50,000 partitions is
tens of megabytes of JSON, and the collector state several; one ``GET`` of such a value
holds Redis for more than 5 ms while it copies the value into the reply. Writers still
``SET`` the whole value (Redis keeps a big argument without copying it) together with a
version key in one MULTI/EXEC. Readers take the version, the lengths, then ``GETRANGE``
pieces of at most :data:`PIECE_BYTES`, and the version again: a write that came between
changes it, and the read is tried again (after a few tries, one MULTI/EXEC of plain
``GET``s settles it).

What a process decoded is kept (:func:`versioned_get`): a page learns from the version's
few bytes that the megabytes it decoded last time are still current, and a worker does
not decode again the collector state it wrote last pass (:func:`loads_cached`).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

import msgspec
import redis
from django.conf import settings

from dashboard.store.batches import WHAT
from dashboard.store.incidents import IncidentPage, incidents_commands, incidents_read
from dashboard.store.keys import ConsoleKeys, LatestKeys, dumps, loads
from dashboard.store.points import Lengths
from dashboard.store.series import PassPoints, Series
from mqcore.boundary import redis_errors
from mqcore.clock import now_ms
from mqcore.models import (
    ClusterSnapshot,
    snapshot_decode,
    snapshot_encode,
    snapshot_encode_parts,
)
from mqcore.wire import Chunked, Command, Wire

__all__ = [
    "PIECE_BYTES",
    "ConsoleStore",
    "OpenPass",
    "SnapshotRead",
    "loads_cached",
    "read_pieces",
    "remember",
    "versioned_get",
    "versioned_put",
]

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
        self.series = Series(client, keys)

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
        cached = versioned_get(slot, self.r.get(version_key))
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        version, (raw,) = read_pieces(self.r, [key], version_key)
        try:
            read = SnapshotRead(snapshot_decode(raw) if raw else None, None)
        except msgspec.MsgspecError as exc:
            log.warning("console store: the snapshot of %s is unreadable: %s", cluster, exc)
            read = SnapshotRead(None, str(exc))
        versioned_put(slot, version, read)
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
        got = self.series.read(cluster, metric, [entity], since_ms=since_ms, now_ms=now)[entity]
        return [(t, v) for t, v in got if t <= until]

    def series_many(
        self, cluster: str, metric: str, entities: Sequence[str], *, since_ms: int
    ) -> dict[str, list[tuple[int, float]]]:
        return self.series.read(cluster, metric, entities, since_ms=since_ms, now_ms=now_ms())

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
        return self._mutes(self.keys.alert_mute(cluster, ""), alert_ids)

    def _mutes(self, prefix: str, alert_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """:meth:`mutes_get` with the silences' key names up to the alert id."""
        ids = list(dict.fromkeys(alert_ids))
        found: dict[str, dict[str, Any]] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            raws = self.r.mget([prefix + i for i in chunk])
            for alert_id, raw in zip(chunk, raws, strict=True):
                value = json.loads(raw) if raw else None  # as the alerts are read
                if isinstance(value, dict):
                    found[alert_id] = value
        return found

    def mute_put(self, cluster: str, alert_id: str, mute: Mapping[str, Any], ttl_s: int) -> None:
        """Store a silence/acknowledgement of ``alert_id`` expiring after ``ttl_s`` (replaces)."""
        self.r.set(self.keys.alert_mute(cluster, alert_id), dumps(mute), ex=int(ttl_s))

    def mute_delete(self, cluster: str, alert_id: str) -> bool:
        """Lift the silence/acknowledgement of ``alert_id``; False when there was none."""
        return bool(self.r.delete(self.keys.alert_mute(cluster, alert_id)))

    # --- collector side -----------------------------------------------------
    def slot_claim(self, cluster: str, slot: int, token: str, ttl_s: int) -> bool:
        """Claim (cluster, slot) for ``token``; True also when ``token`` already holds it.

        A re-run of the same task (same token) may proceed; once the pass has
        written, the claim says ``done`` and nobody writes that slot again.
        """
        return self._claim(self.keys.slot_claim(cluster, slot), token, ttl_s)

    def _claim(self, key: str, token: str, ttl_s: int) -> bool:
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
        None: no claim) and the previous pass's state (:meth:`state_get`). ``mine`` False:
        another run holds the slot and, with ``gather_when_claimed``, the pass writes nothing
        (without, no pass: None). The sender of its series points comes from the series
        (:meth:`~dashboard.store.series.Series.pass_points`)."""
        names = self.keys.latest(cluster, claim[0] if claim is not None else None)
        mine = claim is None or self._claim(names.slot_claim, claim[1], claim[2])
        if not mine and not gather_when_claimed:
            return None
        return OpenPass(self._state(cluster, names), mine)

    def state_get(self, cluster: str) -> dict[str, Any]:
        """Everything a pass needs from the previous one (the big values in pieces).

        The state this process wrote last is not read again while its version stands."""
        return self._state(cluster, self.keys.latest(cluster))

    def _state(self, cluster: str, names: LatestKeys) -> dict[str, Any]:
        pipe = self.r.pipeline(transaction=False)
        pipe.get(names.state_version)
        pipe.hget(names.health, cluster)
        pipe.hgetall(names.alerts)
        version, health, alerts = pipe.execute()
        written = versioned_get(("state", cluster), version)
        if written is None:
            _v, (state, lease_state) = read_pieces(
                self.r, [names.state, names.lease_state], names.state_version
            )
            written = (
                loads_cached(("state", cluster), state),
                loads_cached(("lease", cluster), lease_state),
            )
        return {
            "state": dict(written[0] or {}),
            "lease_state": written[1],
            "health": loads(health) or {},
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
        """Write one pass: series points first (their roll-ups, the series past their cap
        and vanished ones: :meth:`~dashboard.store.series.Series.close_pass`), then everything
        else in one MULTI/EXEC; return the silences and acknowledgements of the alert ids
        ``mutes_of`` (the alerts this pass opened or resolved: :meth:`mutes_get`).

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
        history_max = int(settings.ALERT_HISTORY_MAX)
        if appended is None:
            sender = self.points_sender(cluster, now_ms, every_pass=(), rollups=rollups)
            sender.send_tiers(points)
            appended = sender.lengths
        try:  # the store runs the series writes while this process encodes the values
            cmds = incidents_commands(self.keys, cluster, incidents, now_ms)
            names = self.keys.latest(cluster, slot)
            state_raw = dumps(state)
            lease_raw = dumps(lease_state) if lease_state is not None else b""
            cmds += _alerts_commands(names, alerts_open, alerts_resolved, history_max)
            cmds.append(("HSET", names.health, cluster, dumps(health)))
            snapshot_arg = _parts(snapshot) if snapshot is not None else None
        finally:
            lengths = appended()
        self.series.close_pass(cluster, points.get("raw") or (), rollups, lengths, now_ms)
        version = _version(now_ms)
        if snapshot_arg is not None:
            cmds.append(("SET", names.snapshot, snapshot_arg))
            cmds.append(("SET", names.snapshot_version, version))
        cmds.append(("SET", names.state, state_raw))
        if lease_state is not None:
            cmds.append(("SET", names.lease_state, lease_raw))
        cmds.append(("SET", names.state_version, version))
        if slot is not None:
            cmds.append(("SET", names.slot_claim, "done", "XX", "KEEPTTL"))
        Wire(self.r, 1, WHAT).transaction(cmds)
        remember(("state", cluster), state_raw, state)
        if lease_state is not None:
            remember(("lease", cluster), lease_raw, lease_state)
            versioned_put(("state", cluster), version.encode(), (state, lease_state))
        else:  # the lease state stored is an older one
            versioned_put(("state", cluster), None, None)
        return self._mutes(names.alert_mute, mutes_of) if mutes_of else {}

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
        return PassPoints(self.series, cluster, now_ms, every_pass, rollups)

    def health_write(self, cluster: str, health: Mapping[str, Any]) -> None:
        self.r.hset(self.keys.collector_health(), cluster, dumps(health))

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
        names = self.keys.latest(cluster)
        at = written_ms if written_ms is not None else now_ms()
        cmds = incidents_commands(self.keys, cluster, incidents, at) if incidents else []
        history_max = int(settings.ALERT_HISTORY_MAX)
        cmds += _alerts_commands(names, alerts_open, alerts_resolved, history_max)
        cmds.append(("SET", names.state, dumps(state)))
        cmds.append(("SET", names.state_version, _version(at)))
        Wire(self.r, 1, WHAT).transaction(cmds)
        versioned_put(("state", cluster), None, None)


def _alerts_commands(
    names: LatestKeys,
    alerts_open: Mapping[str, dict[str, Any]],
    alerts_resolved: Sequence[dict[str, Any]],
    history_max: int,
) -> list[Command]:
    """The open alerts in place of the stored ones, the resolved ones onto the history."""
    alerts_key, history_key = names.alerts, names.alert_history
    cmds: list[Command] = [("DEL", alerts_key)]
    if alerts_open:
        cmds.append(
            ("HSET", alerts_key, *[x for k, v in alerts_open.items() for x in (k, dumps(v))])
        )
    if alerts_resolved:
        cmds.append(("LPUSH", history_key, *[dumps(a) for a in alerts_resolved]))
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
    mine: bool  # False: another run holds the slot, nothing is written


# --- big values in pieces, and what this process decoded -----------------------------------------
PIECE_BYTES = 1 << 20  # bytes per GETRANGE: well under a millisecond of Redis time
_ATTEMPTS = 8

# slot -> (stored bytes, decoded value): the collector state this worker wrote last
_DECODED: dict[tuple[str, str], tuple[bytes, Any]] = {}
# slot -> (version, decoded value): values stored with a version key (the snapshot), so a
# reader learns from a few bytes that the megabytes it decoded last time are still current
_VERSIONED: dict[tuple[str, str], tuple[bytes, Any]] = {}


def read_pieces(
    client: Any, keys: Sequence[str], version_key: str
) -> tuple[bytes | None, list[bytes | None]]:
    """(version, values of ``keys``) as of one write; a missing key reads as None."""
    for _ in range(_ATTEMPTS):
        with redis_errors("console store"):
            pipe = client.pipeline(transaction=False)
            pipe.get(version_key)
            for key in keys:
                pipe.strlen(key)
            version, *sizes = pipe.execute()
            pipe = client.pipeline(transaction=False)
            for key, size in zip(keys, sizes, strict=True):
                for start in range(0, int(size), PIECE_BYTES):
                    pipe.getrange(key, start, start + PIECE_BYTES - 1)
            pipe.get(version_key)
            *pieces, after = pipe.execute()
        if after != version:
            continue  # a write came between: read again
        out: list[bytes | None] = []
        at = 0
        for size in sizes:
            n = -(-int(size) // PIECE_BYTES)
            out.append(b"".join(pieces[at : at + n]) if size else None)
            at += n
        if all(v is None or len(v) == int(s) for v, s in zip(out, sizes, strict=True)):
            return version, out
    with redis_errors("console store"):
        pipe = client.pipeline(transaction=True)
        pipe.get(version_key)
        for key in keys:
            pipe.get(key)
        version, *whole = pipe.execute()
    return version, [v or None for v in whole]


def loads_cached(slot: tuple[str, str], raw: bytes | None) -> Any:
    """Decode collector state once per value: the same worker usually wrote it last pass.

    Callers must treat the result as read-only below its top level.
    """
    if not raw:
        return None
    hit = _DECODED.get(slot)
    if hit is not None and hit[0] == raw:
        return hit[1]
    value = loads(raw)
    _DECODED[slot] = (raw, value)
    return value


def remember(slot: tuple[str, str], raw: bytes, value: Any) -> None:
    """Record that ``raw`` (just written) decodes to ``value``, for :func:`loads_cached`."""
    _DECODED[slot] = (raw, value)


def versioned_get(slot: tuple[str, str], version: bytes | None) -> Any:
    """The value decoded for ``slot`` at ``version``; None when it is not at hand.

    Shared between callers (requests of one process): treat it as read-only.
    """
    hit = _VERSIONED.get(slot)
    if version is None or hit is None or hit[0] != version:
        return None
    return hit[1]


def versioned_put(slot: tuple[str, str], version: bytes | None, value: Any) -> None:
    """Keep ``value`` as ``slot``'s decoded value at ``version`` (forget it without one)."""
    if version is None or value is None:
        _VERSIONED.pop(slot, None)
    else:
        _VERSIONED[slot] = (version, value)
