"""A change of the MQ Redis's master, seen by the collector: what it is, what it undid.

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

What the change undid, from the previous pass's status windows (``windows`` of the state):

- :func:`rewound_groups`: groups whose entries-read or last-delivered id is behind the
  previous pass's (the new master did not have their latest deliveries): their REWIND gets
  the cause ``failover`` (:func:`apply_cause`);
- :func:`redelivered_after` (the read end's one call: :func:`redelivery_asks`, the read,
  :func:`redelivered`): entries acked before the change and
  pending again after it. For each partition whose group had been delivered up to an id
  before the change, the pending ids at or below that id are read (bounded:
  :func:`mqcore.admin.failover.pending_up_to`). A partition with nothing pending before the
  change had every such entry acknowledged, so each one pending now was acked and lost its
  ack: exact. A partition with ``k`` pending before may still hold those: at least ``n - k``
  (a lower bound). Entries delivered after the previous pass are not seen (docs/operators.md).

The change is kept in the state and on every snapshot for ``hold_ms`` after it
(``master_change``): the alert holds as long, and REWINDs of the rewound groups keep the
cause while they show.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import msgspec
from msgspec import UNSET

from mqcore.admin.failover import PENDING_LIMIT
from mqcore.codec import id_tuple
from mqcore.errors import MQError
from mqcore.models import (
    ClusterSnapshot,
    MasterChange,
    PartitionLag,
    Redelivered,
    Replication,
    Status,
)

__all__ = [
    "LIMIT",
    "LISTED",
    "MAX_ASKS",
    "Ask",
    "apply_cause",
    "master_change_reason",
    "master_change_step",
    "redelivered",
    "redelivered_after",
    "redelivery_asks",
    "rewound_groups",
]

log = logging.getLogger(__name__)

MAX_ASKS = 5000  # partitions read for redeliveries after one change
LIMIT = PENDING_LIMIT  # pending ids read per partition
LISTED = 50  # redelivered entries kept for the page, all partitions together

Ask = tuple[str, str, int, str]  # topic, group, partition, the last-delivered id before


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


def redelivered_after(
    cluster: str,
    snap: ClusterSnapshot,
    state: Mapping[str, Any],
    read: Callable[[list[Ask]], list[list[str] | None]],
) -> list[Redelivered] | None:
    """When ``snap`` was read from another master than the previous pass's (``state``):
    the entries acked before and pending again, read by ``read`` (the pending ids at or
    below each ask's id, at most :data:`LIMIT` each; its failure leaves them unknown:
    none counted, logged); None when the master did not change."""
    old = state.get("replication")
    repl = snap.replication
    if not repl or master_change_reason(old if isinstance(old, Mapping) else None, repl) is None:
        return None
    asks, before = redelivery_asks(snap, state)
    try:
        found = read(asks)
    except MQError as exc:
        log.warning("collector %s: redelivery read failed: %s", cluster, exc)
        found = [None] * len(asks)
    return redelivered(asks, before, found, LIMIT)


def master_change_step(
    snap: ClusterSnapshot,
    state: Mapping[str, Any],
    found: list[Redelivered] | None,
    *,
    now_ms: int,
    hold_ms: int,
) -> tuple[MasterChange | None, dict[str, Any]]:
    """This pass's master change (a new one, or the last one still held) and the state to
    keep (``replication``, ``master_change``). ``found``: the redelivered entries the read
    end found (None: it saw no change)."""
    repl = snap.replication
    keep: dict[str, Any] = {}
    old = state.get("replication")
    change: MasterChange | None = None
    if repl is not UNSET and repl.role == "master":
        keep["replication"] = msgspec.to_builtins(repl)
        reason = master_change_reason(old if isinstance(old, Mapping) else None, repl)
        if reason is not None:
            entries = found or []
            listed: list[Redelivered] = []
            room = LISTED
            for item in entries:
                if room <= 0:
                    break
                listed.append(msgspec.structs.replace(item, ids=item.ids[:room]))
                room -= len(listed[-1].ids) or 1
            change = MasterChange(
                at_ms=now_ms,
                reason=reason,
                from_run_id=str(old.get("run_id") or "") if isinstance(old, Mapping) else "",
                to_run_id=repl.run_id,
                from_offset=int(old.get("offset") or 0) if isinstance(old, Mapping) else 0,
                to_offset=repl.offset,
                rewound=rewound_groups(snap, state),
                redelivered=sum(r.count for r in entries),
                redelivered_exact=all(r.exact for r in entries),
                redelivered_entries=listed,
            )
    if change is None:
        held = state.get("master_change")
        if isinstance(held, Mapping) and now_ms - int(held.get("at_ms") or 0) <= hold_ms:
            try:
                change = msgspec.convert(held, MasterChange)
            except msgspec.ValidationError:  # state of an older format
                change = None
    keep["master_change"] = msgspec.to_builtins(change) if change is not None else None
    return change, keep


def apply_cause(snap: ClusterSnapshot, change: MasterChange) -> None:
    """The master change on the snapshot; the cause ``failover`` on the REWIND of every
    group it rewound (its reason says so, on the page and in the API)."""
    snap.master_change = change
    rewound = set(change.rewound)
    if not rewound:
        return
    for topic in snap.topics:
        for group in topic.groups:
            if f"{topic.topic}/{group.group}" not in rewound:
                continue
            if group.status is not Status.REWIND:
                continue
            group.rewind_cause = "failover"
            group.status_reason = f"{group.status_reason} (cause: failover)"
            for part in group.partitions:
                if part.status is Status.REWIND:
                    part.status_reason = f"{part.status_reason} (cause: failover)"
