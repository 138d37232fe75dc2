"""Lag arithmetic: one definition for the live admin reads and the collector's snapshot.

A partition's lag is what Redis reports in ``XINFO GROUPS`` (EXACT). When Redis
reports NULL (an entry was deleted, or the group was created mid-stream) the
entries after the group's position are counted in ``COUNT_PAGE`` pages up to
``LAG_COUNT_CAP``: COUNTED when the count reached the end of the stream,
APPROXIMATE (a lower bound) when it stopped at the cap. ``lag_ms`` is the age of
the first undelivered entry. Group totals sum the partitions that know their
lag; topic totals sum the groups and are unknown when one group is.

Everything here is pure except :func:`count_null_lag`, which reads through the
``fetch_after`` callable it is given, so both readers share the paging rule.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from operator import attrgetter
from typing import Any

from mqcore.codec import id_ms
from mqcore.models import GroupLag, LagExactness, PartitionLag

__all__ = [
    "COUNT_PAGE",
    "LAG_COUNT_CAP",
    "NULL_LAG",
    "NullLag",
    "combine_group_lag",
    "count_null_lag",
    "group_totals",
    "lag_ms_from_id",
    "partition_row",
    "topic_totals",
]

COUNT_PAGE = 1000  # one XRANGE page when counting a NULL lag: ~0.3 ms of Redis time
LAG_COUNT_CAP = 10_000  # count at most this many entries per partition
NULL_LAG = "Redis reports no lag (deleted entry or group created mid-stream)"

NullLag = tuple[int, LagExactness, str]  # (counted, exactness, reason)

# per exactness, whether the lag is exact: a dict lookup, where an enum's attributes cost
# far more (partition_row runs for every partition of every snapshot)
_LAG_EXACT = {e: e is not LagExactness.APPROXIMATE for e in LagExactness}
_BY_PARTITION = attrgetter("partition")


def lag_ms_from_id(first_undelivered_id: str | None, now_ms: int) -> int:
    """Age of the first undelivered entry (auto ids are ``ms-seq``); 0 when nothing waits."""
    if not first_undelivered_id:
        return 0
    age = now_ms - id_ms(first_undelivered_id)
    return age if age > 0 else 0


def count_null_lag(
    first_page: Sequence[str], fetch_after: Callable[[str], Sequence[str]]
) -> NullLag:
    """Count a NULL lag from the first page of ids after the group's position.

    ``fetch_after(id)`` returns the ids of the next page (``XRANGE (id + COUNT
    COUNT_PAGE``); it is called only while pages come back full and the count is
    under ``LAG_COUNT_CAP``.
    """
    counted, page = len(first_page), first_page
    while len(page) >= COUNT_PAGE and counted < LAG_COUNT_CAP:
        page = fetch_after(page[-1])
        counted += len(page)
    if len(page) >= COUNT_PAGE:
        reason = f"{NULL_LAG}; counted at least {counted} (count capped)"
        return counted, LagExactness.APPROXIMATE, reason
    return counted, LagExactness.COUNTED, f"{NULL_LAG}; counted to the end"


def partition_row(
    *,
    partition: int,
    last_delivered_id: str,
    lag: int,
    exactness: LagExactness,
    reason: str,
    first_id: str | None,
    now_ms: int,
    pending: int,
    oldest_pending_ms: int | None,
    entries_read: int | None,
    length: int,
    last_id: str | None,
    oldest_pending_id: str | None = None,
    oldest_pending_consumer: str | None = None,
) -> PartitionLag:
    """One partition's lag as the snapshot stores it."""
    return PartitionLag(
        partition,
        last_delivered_id,
        lag,
        lag_ms_from_id(first_id, now_ms) if lag else 0,
        pending,
        _LAG_EXACT[exactness],
        exactness,
        reason,
        oldest_pending_ms,
        entries_read,
        length,
        last_id,
        oldest_pending_id,
        oldest_pending_consumer,
    )


def group_totals(partitions: Iterable[PartitionLag]) -> dict[str, Any]:
    """Group totals: summed lag of the partitions that know it, worst time lag, summed pending.

    ``lag`` is None only when no partition could tell; ``lag_exact`` is False as
    soon as one partition's figure is a lower bound or unknown.
    """
    rows = 0
    lag: Any = None  # the sum of the known lags
    lag_ms: Any = None  # the worst known time lag
    pending: Any = 0
    exact = True
    for p in partitions:  # one loop: a snapshot has a few partitions per group, many groups
        rows += 1
        value = p.lag
        if value is not None:
            lag = value if lag is None else lag + value
        value = p.lag_ms
        if value is not None and (lag_ms is None or value > lag_ms):
            lag_ms = value
        pending += p.pending
        if exact and not p.lag_exact:
            exact = False
    return {
        "lag": 0 + lag if lag is not None else (None if rows else 0),
        "lag_ms": lag_ms if lag_ms is not None or rows else 0,
        "pending": pending,
        "lag_exact": exact,
    }


def topic_totals(groups: Iterable[GroupLag]) -> tuple[int | None, int | None, int, int | None]:
    """Topic totals over its groups, ``(lag, lag_ms, pending, oldest_pending_ms)``: ``lag``
    is None when one group's is (a partial sum would understate it); ``lag_ms`` and
    ``oldest_pending_ms`` are the worst known."""
    lag: int | None = 0
    lag_ms: int | None = None
    pending = 0
    oldest: int | None = None
    for g in groups:
        value = g.lag
        if value is None:
            lag = None
        elif lag is not None:
            lag += value
        value = g.lag_ms
        if value is not None and (lag_ms is None or value > lag_ms):
            lag_ms = value
        pending += g.pending
        for p in g.partitions:
            value = p.oldest_pending_ms
            if value is not None and (oldest is None or value > oldest):
                oldest = value
    return lag, lag_ms, pending, oldest


def combine_group_lag(group: str, partitions: list[PartitionLag]) -> GroupLag:
    """A ``GroupLag`` with :func:`group_totals` over the partitions, sorted by partition
    (the live read's and the snapshot's)."""
    return GroupLag(
        group=group, partitions=sorted(partitions, key=_BY_PARTITION), **group_totals(partitions)
    )
