"""Replication, as the collector's read end sees it: where the pass's snapshot is read, and
whether the MQ Redis's master changed since the previous pass, with what the change undid.

The snapshot (:func:`pass_snapshot`): from the cluster's replica when it reads one
(:class:`~dashboard.clusters.PassReaders` ``replica``), with the primary's run id and
replication facts and how far the replica was behind (``replica``); from the primary when
the cluster reads it, or when the replica cannot be read.

Every pass reads the server's run id and replication facts with the snapshot (one
``INFO server replication``, the round trip the run id took alone before: a failover is
seen on the first pass after it, not within the minute, and the redelivery check needs the
previous pass's positions). The previous pass's facts are kept in the collector state
(``replication``). :func:`master_change_reason` compares the two:

- ``promoted``: the new master's replication history continues the old one's
  (``master_replid2`` is the old ``master_replid``): a replica was promoted, a failover;
- ``replaced``: another server (run id and port changed) without a plain restart's traits.

Only masters are compared and kept: a pass that reads a replica (a client that met the old
master just as it was demoted) changes nothing, and the next pass on the new master is
compared with the last master seen.

A restart of the same server (new run id, a history not continued, same port) is not a
master change: the restart check tells it (``redis_restart``).

What the change undid (:func:`change_seen`, the read end's one call after the snapshot),
from the previous pass's status windows (``windows`` of the state):

- :func:`rewound_groups`: groups whose entries-read or last-delivered id is behind the
  previous pass's (the new master did not have their latest deliveries): their REWIND gets
  the cause ``failover`` (the derive stage's ``apply_cause``);
- :func:`redelivery_asks`, the read it is handed, :func:`redelivered`: entries acked before
  the change and pending again after it. For each partition whose group had been delivered
  up to an id before the change, the pending ids at or below that id are read (bounded:
  :func:`mqcore.admin.failover.pending_up_to`). A partition with nothing pending before the
  change had every such entry acknowledged, so each one pending now was acked and lost its
  ack: exact. A partition with ``k`` pending before may still hold those: at least ``n - k``
  (a lower bound). Entries delivered after the previous pass are not seen (docs/operators.md).

The derive stage (:mod:`dashboard.collectors.derive`) makes the :class:`MasterChange` of
what is seen here, keeps it in the state and on every snapshot for a while after it, and
gives the REWINDs of the rewound groups its cause.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dashboard.clusters import PassReaders
from mqcore.admin.failover import PENDING_LIMIT
from mqcore.codec import id_tuple
from mqcore.config import redact_urls
from mqcore.errors import MQError
from mqcore.models import ClusterSnapshot, PartitionLag, Redelivered, ReplicaRead, Replication
from mqcore.snapshot import server_facts

__all__ = [
    "LIMIT",
    "MAX_ASKS",
    "Ask",
    "ChangeSeen",
    "change_seen",
    "master_change_reason",
    "pass_snapshot",
    "redelivered",
    "redelivery_asks",
    "rewound_groups",
]

log = logging.getLogger(__name__)

MAX_ASKS = 5000  # partitions read for redeliveries after one change
LIMIT = PENDING_LIMIT  # pending ids read per partition

Ask = tuple[str, str, int, str]  # topic, group, partition, the last-delivered id before


@dataclass(frozen=True, slots=True)
class ChangeSeen:
    """A master change seen by this pass's read: why (:func:`master_change_reason`), the
    groups it rewound ("topic/group") and the entries it brought back."""

    reason: str
    rewound: list[str]
    redelivered: list[Redelivered]


def master_change_reason(old: Mapping[str, Any] | None, new: Replication) -> str | None:
    """Why ``new`` (this pass's replication facts) is another master than ``old`` (the
    previous pass's, as stored), or None."""
    if not old or not old.get("run_id") or not new.run_id or new.role != "master":
        return None
    old_replid = str(old.get("replid") or "")
    if old["run_id"] == new.run_id:
        return None
    if old_replid and new.replid2 == old_replid:
        return "promoted"
    if old.get("port") is not None and old.get("port") != new.port:
        return "replaced"
    return None  # the same server restarted: the restart check's


def _compared(
    snap: ClusterSnapshot, state: Mapping[str, Any]
) -> Iterator[tuple[str, str, PartitionLag, tuple[Any, str, int]]]:
    """(topic, group, partition, what the previous pass saw of it) of every partition of a
    readable topic the previous pass's status windows (``state["windows"]``) know: that
    pass's position, last-delivered id and pending count."""
    windows = state.get("windows")
    if not isinstance(windows, Mapping):
        return
    for topic in snap.topics:
        t_old = windows.get(topic.topic)
        if topic.error or not isinstance(t_old, Mapping):
            continue
        for group in topic.groups:
            g_old = t_old.get(group.group)
            if not isinstance(g_old, list):
                continue
            for part in group.partitions:
                pid = part.partition
                entry = g_old[pid] if pid < len(g_old) else None
                # a window entry: [last_active, pending, lags, positions, ids]
                if isinstance(entry, list) and len(entry) >= 5 and entry[3] and entry[4]:
                    before = (entry[3][-1], str(entry[4][-1] or ""), int(entry[1] or 0))
                    yield topic.topic, group.group, part, before


def _behind(now: str, then: str) -> bool:
    try:
        return id_tuple(now) < id_tuple(then)
    except ValueError:
        return False


def rewound_groups(snap: ClusterSnapshot, state: Mapping[str, Any]) -> list[str]:
    """ "topic/group" of the groups with a partition behind the previous pass's position."""
    out: list[str] = []
    for topic, group, part, (position, last_id, _) in _compared(snap, state):
        name = f"{topic}/{group}"
        if out and out[-1] == name:
            continue
        read = part.entries_read
        if (isinstance(position, int) and read is not None and read < position) or (
            last_id and _behind(part.last_delivered_id, last_id)
        ):
            out.append(name)
    return out


def redelivery_asks(snap: ClusterSnapshot, state: Mapping[str, Any]) -> tuple[list[Ask], list[int]]:
    """What to read for redeliveries (at most :data:`MAX_ASKS`) and, beside each, the
    entries the partition had pending before the change."""
    asks: list[Ask] = []
    pending: list[int] = []
    for topic, group, part, (_, last_id, had) in _compared(snap, state):
        if not last_id or last_id == "0-0":
            continue
        asks.append((topic, group, part.partition, last_id))
        pending.append(had)
        if len(asks) >= MAX_ASKS:
            break
    return asks, pending


def redelivered(
    asks: Sequence[Ask], before: Sequence[int], found: Sequence[list[str] | None], limit: int
) -> list[Redelivered]:
    """The partitions with entries pending again (``found``: the pending ids at or below
    each ask's id, at most ``limit`` each)."""
    out = []
    for (topic, group, pid, _), had, ids in zip(asks, before, found, strict=True):
        if not ids:
            continue
        exact = had == 0 and len(ids) < limit
        count = len(ids) if had == 0 else max(0, len(ids) - had)
        if count:
            out.append(Redelivered(topic, group, pid, count, ids if had == 0 else [], exact))
    return out


def change_seen(
    cluster: str,
    snap: ClusterSnapshot,
    state: Mapping[str, Any],
    read: Callable[[list[Ask]], list[list[str] | None]],
) -> ChangeSeen | None:
    """When ``snap`` was read from another master than the previous pass's (``state``):
    why, the groups it rewound and the entries acked before and pending again, read by
    ``read`` (the pending ids at or below each ask's id, at most :data:`LIMIT` each; its
    failure leaves them unknown: none counted, logged); None when the master did not
    change."""
    old = state.get("replication")
    repl = snap.replication
    if not repl:
        return None
    reason = master_change_reason(old if isinstance(old, Mapping) else None, repl)
    if reason is None:
        return None
    asks, before = redelivery_asks(snap, state)
    try:
        found = read(asks)
    except MQError as exc:
        log.warning("collector %s: redelivery read failed: %s", cluster, exc)
        found = [None] * len(asks)
    return ChangeSeen(reason, rewound_groups(snap, state), redelivered(asks, before, found, LIMIT))


def pass_snapshot(cluster: str, readers: PassReaders, batch: int) -> ClusterSnapshot:
    """The pass's snapshot: from the cluster's replica when it reads one, with the primary's
    run id and replication facts and how far the replica was behind (``replica``); from the
    primary when the cluster reads it, or when the replica cannot be read (logged)."""
    primary = readers.admin
    if readers.replica is not None:
        try:
            snap = readers.replica.snapshot(batch=batch, last_ids=False)
        except Exception as exc:
            error = redact_urls(f"{type(exc).__name__}: {exc}")
            log.warning("collector %s: replica read failed, read the primary: %s", cluster, error)
        else:
            replica = snap.replication
            snap.redis_run_id, snap.replication = server_facts(primary.client)
            if replica:
                facts = snap.replication
                snap.replica = ReplicaRead(
                    run_id=replica.run_id,
                    port=replica.port,
                    offset=replica.offset,
                    lag_bytes=max(0, facts.offset - replica.offset) if facts else None,
                    link=replica.link,
                    last_io_s=replica.last_io_s,
                )
            return snap
    return primary.snapshot(batch=batch, last_ids=False)
