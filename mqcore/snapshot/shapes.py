"""The parts of a snapshot built from replies, shared with :class:`mqcore.admin.Admin`'s live
reads: a partition's lease, a group's consumers, a topic's retry backlog (one builder each,
one type each: :mod:`mqcore.models`)."""

from __future__ import annotations

import contextlib
import json
from typing import Any

from mqcore.codec import decode_text
from mqcore.models import ConsumerInfo, LeaseInfo, RetryBacklog
from mqcore.snapshot.replies import first_score

__all__ = ["consumers_of", "lease_of", "retry_backlog_of"]


def lease_of(group: str, partition: int, owner: Any, ttl: Any, epoch: Any) -> LeaseInfo:
    """A partition's lease from its owner, ``PTTL`` and epoch replies (an owner whose key
    is gone, ``PTTL`` -2, is no owner; an unreadable epoch is 0)."""
    alive = owner is not None and ttl.__class__ is int and ttl != -2
    epoch_n = 0
    if epoch is not None:  # no epoch key: the usual case, and a raised TypeError costs a us
        with contextlib.suppress(TypeError, ValueError):
            epoch_n = int(epoch)
    return LeaseInfo(
        group,
        partition,
        decode_text(owner) if alive else None,
        ttl if alive and ttl >= 0 else None,
        epoch_n,
    )


def consumers_of(
    group: str, stats: dict[str, dict[str, int]], beats: dict[Any, Any], now: int
) -> list[ConsumerInfo]:
    """Consumers of a group: XINFO CONSUMERS stats joined with mqcore heartbeats, by name."""
    hb: dict[str, dict[str, Any]] = {}
    for name, raw in beats.items():
        try:
            data = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            continue
        if isinstance(data, dict):
            hb[decode_text(name)] = data
    out = []
    # once per consumer of every group of a pass: no throwaway defaults
    for name in sorted(stats.keys() | hb.keys()) if hb else sorted(stats):
        s = stats.get(name)
        pending, s_idle = (0, -1) if s is None else (s["pending"], s["idle"])
        beat = hb.get(name)
        seen_age = cap = None
        held_n: list[int] = []
        if beat is not None:
            last_seen = beat.get("last_seen_ms")
            if isinstance(last_seen, (int, float)):  # a tuple checks faster than a union
                seen_age = max(0, now - int(last_seen))
            held = beat.get("partitions") or []
            held_n = sorted([int(p) for p in held if isinstance(p, int)])
            cap = beat.get("max_partitions")
        out.append(
            ConsumerInfo(
                group,
                name,
                pending,
                s_idle if s_idle >= 0 else (seen_age if seen_age is not None else 0),
                seen_age,
                held_n,
                int(cap) if isinstance(cap, int) else None,
            )
        )
    return out


def retry_backlog_of(count: Any, oldest: Any, due: Any) -> RetryBacklog:
    """The retry backlog from ``ZCARD`` and the two ``WITHSCORES`` replies: the oldest item,
    the next due from now."""
    return RetryBacklog(int(count or 0), first_score(due), first_score(oldest))
