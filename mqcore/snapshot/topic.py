"""One topic of a pass: the replies of its commands turned into its :class:`TopicSnapshot`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mqcore import lag as lagmath
from mqcore.models import LagExactness, LeaseInfo, PartitionLag, TopicSnapshot
from mqcore.snapshot.replies import (
    as_hash,
    entry_id,
    last_generated,
    ok,
    pending_consumer,
    pending_id,
    pending_idle,
)
from mqcore.snapshot.shapes import consumers_of, lease_of, retry_backlog_of

__all__ = ["topic_snapshot"]

# module constants: an enum member read as ``LagExactness.EXACT`` costs ~0.1 us (the enum
# metaclass), once per group x partition of every pass
_EXACT = LagExactness.EXACT
_NO_OWNERS: frozenset[str] = frozenset()


def topic_snapshot(
    t: int,
    name: str,
    dlq_length: int,
    retry_count: int,
    now: int,
    errors: dict[int, str],
    t_parts: list[tuple[int, list[list[Any]], str | None, int]],
    streams: list[str],
    r2: list[Any],
    retry_idx: int | None,
    r3: list[Any],
    beat_at: dict[tuple[int, str], int],
    new_first: dict[tuple[str, str], tuple[Any, str]],
    new_last: dict[str, tuple[Any, str]],
    lease_values: list[Any],
    ttls: list[Any],
    fetch_after: Callable[[str], Callable[[str], list[str]]],
) -> TopicSnapshot:
    """Topic ``t``'s snapshot from the replies of phases 2 and 3 (``r2``, ``r3``).

    ``t_parts`` holds per partition its length, its group records (see
    :func:`mqcore.snapshot.plan.take_snapshot`), its last id when known and the
    index of the reply whose first entry is the last (its ``XREVRANGE``, or the ``XRANGE``
    of a group with lag 1; -1: none); a last id neither tells is None. First and last ids
    read here are written to ``new_first`` / ``new_last`` for the next pass. Record ``n``'s
    lease owner and epoch are ``lease_values[2n]`` and ``lease_values[2n + 1]``, its lease's
    ``PTTL`` ``ttls[n]`` (None when not read: no owner). Reply errors mark the topic in
    ``errors``.
    """
    lengths = [x[0] for x in t_parts]
    part_ids: list[str | None] = []
    for p, (length, _recs, known, last_at) in enumerate(t_parts):
        if known is None and last_at >= 0:
            page = ok(r3[last_at], errors, t, None)
            # an emptied stream's XINFO STREAM; else its last entry (None: emptied meanwhile)
            known = last_generated(page) if not length else (entry_id(page[0]) if page else None)
            if known is not None and streams[p] in new_last:
                new_last[streams[p]] = (new_last[streams[p]][0], known)
            elif streams[p] in new_last:
                del new_last[streams[p]]
        part_ids.append(known)
    per_group: dict[str, list[PartitionLag]] = {}
    leases: list[LeaseInfo] = []
    add_lease = leases.append
    owners: dict[str, set[str]] = {}
    partition_row = lagmath.partition_row
    for p, (length, recs, _known, _at) in enumerate(t_parts):
        last_id = part_ids[p]
        stream = streams[p]
        for (
            gname,
            pending,
            last,
            entries_read,
            lag,
            rec_n,
            pend_at,
            range_at,
            first_id,
            mark,
        ) in recs:
            reason = ""
            exactness = _EXACT
            if lag is None:
                first = ok(r3[range_at], errors, t, None) or []
                page = [entry_id(e) for e in first]
                lag, exactness, reason = lagmath.count_null_lag(page, fetch_after(stream))
                first_id = page[0] if page else None
            elif range_at >= 0:
                first = r3[range_at]
                if isinstance(first, Exception):
                    first = ok(first, errors, t, None)
                first_id = entry_id(first[0]) if first else None
            if mark is not None and first_id is not None and last != "0-0":
                new_first[stream, gname] = (mark, first_id)
            oldest = oldest_id = holder = None
            if pend_at >= 0:
                page = r3[pend_at]
                if page.__class__ is list and page and page[0].__class__ is list:
                    oldest = int(page[0][2])  # raw reply: [[id, consumer, idle, deliveries]]
                    oldest_id = entry_id(page[0])
                    holder = pending_consumer(page)
                else:
                    page = ok(page, errors, t, None)
                    oldest, oldest_id = pending_idle(page), pending_id(page)
                    holder = pending_consumer(page)
            group_parts = per_group.get(gname)
            if group_parts is None:
                group_parts = per_group[gname] = []
            group_parts.append(
                partition_row(
                    partition=p,
                    last_delivered_id=last,
                    lag=lag,
                    exactness=exactness,
                    reason=reason,
                    first_id=first_id,
                    now_ms=now,
                    pending=pending,
                    oldest_pending_ms=oldest,
                    entries_read=entries_read,
                    length=length,
                    last_id=last_id,
                    oldest_pending_id=oldest_id,
                    oldest_pending_consumer=holder,
                )
            )
            owner = lease_values[2 * rec_n]
            epoch = lease_values[2 * rec_n + 1]
            if isinstance(owner, Exception) or isinstance(epoch, Exception):
                failed = owner if isinstance(owner, Exception) else epoch
                owner, epoch = ok(failed, errors, t, None) or (None, None)
            ttl = ttls[rec_n]
            if ttl.__class__ is not int and ttl is not None:
                ttl = ok(ttl, errors, t, -2)
            lease = lease_of(gname, p, owner, ttl, epoch)
            add_lease(lease)
            if lease.owner is not None:
                owned = owners.get(gname)
                if owned is None:
                    owned = owners[gname] = set()
                owned.add(lease.owner)
    consumers = []
    group_names = sorted(per_group) if len(per_group) > 1 else list(per_group)
    for gname in group_names:
        beats = as_hash(ok(r3[beat_at[t, gname]], errors, t, {}))
        stats = {o: {"pending": 0, "idle": -1} for o in owners.get(gname, _NO_OWNERS)}
        consumers.extend(consumers_of(gname, stats, beats, now))
    oldest_due = due = None
    if retry_idx is not None:
        oldest_due, due = ok(r2[retry_idx], errors, t, None), ok(r2[retry_idx + 1], errors, t, None)
    if len(per_group) > 1:
        leases.sort(key=lambda x: (x.group, x.partition))
    return TopicSnapshot(
        name,
        len(t_parts),
        sum(lengths),
        dlq_length,
        retry_backlog_of(retry_count, oldest_due, due),
        [lagmath.combine_group_lag(g, per_group[g]) for g in group_names],
        leases,
        consumers,
        lengths,
        part_ids,
    )
