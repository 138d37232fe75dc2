"""Lease ownership changes between two passes: the events of the lease timeline."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["lease_diff"]


def _lease_state(
    snap: Mapping[str, Any], previous: Mapping[str, Any] | None, now_ms: int, *, owned_only: bool
) -> dict[str, Any]:
    """key -> [owner, epoch, expires_at_ms] of the snapshot's leases (those with an owner
    only, with ``owned_only``); a topic that could not be read keeps its previous ones."""
    state: dict[str, Any] = {}
    for topic in snap.get("topics") or ():
        if topic.get("error"):
            for key, value in (previous or {}).items():
                if key.split("\x1f", 1)[0] == topic["topic"]:
                    state[key] = value
            continue
        name = topic["topic"]
        for lease in topic.get("leases") or ():
            owner = lease.get("owner")
            if owner is None and owned_only:
                continue
            ttl = lease.get("ttl_ms")
            state[f"{name}\x1f{lease['group']}\x1f{lease['partition']}"] = [
                owner,
                int(lease.get("epoch") or 0),
                now_ms + int(ttl or 0),
            ]
    return state


def _changes(previous: Mapping[str, Any], state: Mapping[str, Any]) -> tuple[list[str], int]:
    """The keys of ``state`` whose owner or epoch changed, and how many were in ``previous``."""
    changed: list[str] = []
    seen = 0
    before = previous.get
    for key, new in state.items():
        old = before(key)
        if old is None:
            if new[0] is not None:
                changed.append(key)
        else:
            seen += 1
            if old[0] != new[0] or old[1] != new[1]:
                changed.append(key)
    return changed, seen


def lease_diff(
    previous: Mapping[str, Any] | None, snap: Mapping[str, Any], now_ms: int
) -> tuple[dict[str, list[dict[str, Any]]], dict[str, Any]]:
    """Ownership changes since the previous pass, per topic (newest first), and the new state.

    State: "topic\\x1fgroup\\x1fpartition" -> [owner, epoch, expires_at_ms]. A lease
    that vanished before its TTL ran out was released; after it, it expired.
    The first pass ever only records the state.
    """
    events: dict[str, list[dict[str, Any]]] = {}
    if previous is None:
        return events, _lease_state(snap, previous, now_ms, owned_only=False)
    # a lease without an owner then and now changes nothing: only owners are compared. A
    # snapshot has one lease per group and partition: when every lease of the previous pass
    # still has an owner, the leases without one need not be looked at.
    state = _lease_state(snap, previous, now_ms, owned_only=True)
    changed, seen = _changes(previous, state)
    if seen != len(previous):  # some lost their owner or vanished
        state = _lease_state(snap, previous, now_ms, owned_only=False)
        changed, _ = _changes(previous, state)
        changed.extend(key for key in previous if key not in state)
    for key in sorted(changed):
        old_owner, old_epoch, old_expiry = previous.get(key) or [None, 0, 0]
        new_owner, new_epoch, _ = state.get(key) or [None, old_epoch, 0]
        topic, group, part = key.split("\x1f")
        event = None
        if old_owner is None and new_owner is not None:
            event = "acquired"
        elif old_owner is not None and new_owner is None:
            event = "expired" if now_ms >= int(old_expiry) else "released"
        elif old_owner != new_owner:
            event = "taken_over"
        elif new_owner is not None and new_epoch != old_epoch:
            event = "acquired"
        if event:
            events.setdefault(topic, []).append(
                {
                    "at_ms": now_ms,
                    "group": group,
                    "partition": int(part),
                    "event": event,
                    "owner": new_owner,
                    "previous_owner": old_owner,
                    "epoch": new_epoch,
                }
            )
    return events, {k: v for k, v in state.items() if v[0] is not None}
