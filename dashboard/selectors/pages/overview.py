"""The overview page: one row per visible topic, sorted, filtered, counted and paged.

Rows come from the collectors' latest snapshot; the lag sparklines of the shown
rows from the stored time series. The default sort is worst status first, in the
severity order of :class:`dashboard.status.Status`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NotRequired, TypedDict

import msgspec

from dashboard import charts
from dashboard.clusters import console_store
from dashboard.permissions import topic_visible, view_scopes
from dashboard.selectors.pages.params import PAGE_SIZE, Order, Paged
from dashboard.selectors.pages.snapshot import now_ms, snapshot_age_ms, snapshot_get, snapshot_read
from dashboard.status import WORST_FIRST, Status
from mqcore.keys import validate_name
from mqcore.models import ClusterSnapshot, TopicSnapshot

__all__ = [
    "OverviewPage",
    "OverviewRow",
    "OverviewSort",
    "overview_get",
    "overview_row",
    "row_json",
    "topics_get",
]

OverviewSort = Literal["status", "topic", "lag", "lag_ms", "pending", "oldest", "dlq", "length"]
SPARK_WINDOW_MS = 3_600_000
EXACTNESS_RANK = {"exact": 0, "counted": 1, "approximate": 2, "unknown": 3}


def _topic_exactness(topic: TopicSnapshot) -> str:
    """Worst lag exactness over every partition of every group of ``topic``."""
    worst = "exact"
    for group in topic.groups:
        for part in group.partitions:
            ex = "unknown" if part.lag is None else part.exactness.value
            if EXACTNESS_RANK[ex] > EXACTNESS_RANK[worst]:
                worst = ex
    return worst


def _lag_reasons(topic: TopicSnapshot) -> str:
    reasons = [
        f"{group.group}/p{part.partition}: {part.lag_reason}"
        for group in topic.groups
        for part in group.partitions
        if part.lag_reason
    ]
    return "; ".join(reasons[:5]) + (" …" if len(reasons) > 5 else "")


def _listable(topic: TopicSnapshot) -> bool:
    """A snapshot topic that can become a row (a valid topic name: it goes into URLs)."""
    try:
        validate_name("topic", topic.topic)
    except ValueError:
        return False
    return True


class OverviewRow(TypedDict):
    """One topic's row of the overview (the API's field names)."""

    topic: str
    partitions: int
    length: int
    groups: int
    group_names: list[str]
    lag: int | None
    lag_ms: int | None
    exactness: str  # the worst of its partitions
    lag_reason: str
    pending: int
    oldest_pending_ms: int | None
    dlq_length: int
    dlq_growth: int
    retry_count: int
    status: str
    status_reason: str
    error: str | None
    sparkline: NotRequired[str]  # the lag of the last hour, the rows of a page only


def overview_row(topic: TopicSnapshot) -> OverviewRow:
    """One overview row of a snapshot topic."""
    status = Status.ERR if topic.error else topic.status
    return {
        "topic": topic.topic,
        "partitions": topic.partitions,
        "length": topic.length,
        "groups": len(topic.groups),
        "group_names": [g.group for g in topic.groups],
        "lag": topic.lag,
        "lag_ms": topic.lag_ms,
        "exactness": _topic_exactness(topic),
        "lag_reason": _lag_reasons(topic),
        "pending": topic.pending,
        "oldest_pending_ms": topic.oldest_pending_ms,
        "dlq_length": topic.dlq_length,
        "dlq_growth": topic.dlq_growth or 0,
        "retry_count": topic.retry.count,
        "status": status.value,
        "status_reason": topic.status_reason or topic.error or "",
        "error": topic.error,
    }


def _sort_key(sort: str) -> Callable[[OverviewRow], Any]:
    big = float("inf")

    def nullable(value: Callable[[OverviewRow], int | None]) -> Callable[[OverviewRow], Any]:
        # Unknown values sort as the largest (worst) so they are never hidden at the end.
        return lambda row: (big if (v := value(row)) is None else v, row["topic"])

    keys: dict[str, Callable[[OverviewRow], Any]] = {
        "status": lambda row: (
            Status(row["status"]).severity,
            big if row["lag"] is None else row["lag"],
            row["dlq_growth"],
            row["topic"],
        ),
        "topic": lambda row: row["topic"],
        "lag": nullable(lambda row: row["lag"]),
        "lag_ms": nullable(lambda row: row["lag_ms"]),
        "pending": lambda row: (row["pending"], row["topic"]),
        "oldest": nullable(lambda row: row["oldest_pending_ms"]),
        "dlq": lambda row: (row["dlq_length"], row["dlq_growth"], row["topic"]),
        "length": lambda row: (row["length"], row["topic"]),
    }
    return keys[sort]


@dataclass
class OverviewPage:
    """One page of overview rows plus the snapshot's age and the per-status counts.

    ``counts`` has every status, worst first; ``topics_total`` counts the visible
    topics before the problem and text filters.
    """

    cluster: str
    snapshot_found: bool
    taken_at_ms: int | None
    age_ms: int | None
    elapsed_ms: float | None
    rows: Paged
    counts: dict[str, int] = field(default_factory=dict)
    topics_total: int = 0
    sort: str = "status"
    order: str = "desc"
    only_problems: bool = False
    q: str = ""
    collector: dict[str, Any] = field(default_factory=dict)
    unreadable: str | None = None  # why the stored snapshot was refused
    replica: dict[str, Any] | None = None  # the replica the snapshot was read from

    def json(self) -> dict[str, Any]:
        """The API's answer: the snapshot's age, the counts, one page of rows."""
        r = self.rows
        return {
            "cluster": self.cluster,
            "snapshot": self.snapshot_found,
            "taken_at_ms": self.taken_at_ms,
            "age_ms": self.age_ms,
            "counts": self.counts,
            "replica": self.replica,
            "topics_total": self.topics_total,
            "total": r.total,
            "page": r.page,
            "pages": r.pages,
            "per_page": r.per_page,
            "topics": [row_json(row) for row in r.items],
        }


def row_json(row: OverviewRow) -> dict[str, Any]:
    """A row as the API shows it (no sparkline, no group names)."""
    return {k: v for k, v in row.items() if k not in ("sparkline", "group_names")}


# cluster -> (the snapshot object, its rows): the store hands out one decoded snapshot per
# version, so its rows are built once per version too; requests only filter and copy them
_ROWS: dict[str, tuple[ClusterSnapshot, list[OverviewRow]]] = {}


def _all_rows(snap: ClusterSnapshot, cluster: str) -> list[OverviewRow]:
    hit = _ROWS.get(cluster)
    if hit is not None and hit[0] is snap:
        return hit[1]
    rows = [overview_row(t) for t in snap.topics if _listable(t)]
    _ROWS[cluster] = (snap, rows)
    return rows


def _visible_rows(snap: ClusterSnapshot, cluster: str, user: Any) -> list[OverviewRow]:
    """Rows of the topics ``user`` may see; the caller may change them (they are copies)."""
    rows = _all_rows(snap, cluster)
    if view_scopes(user) is None:  # some grant sees every topic: no per-topic question
        return [row.copy() for row in rows]
    return [row.copy() for row in rows if topic_visible(user, cluster, row["topic"])]


def overview_get(
    cluster: str,
    *,
    user: Any,
    sort: OverviewSort = "status",
    order: Order = "desc",
    problems: bool = False,
    q: str = "",
    page: int = 1,
    per_page: int = PAGE_SIZE,
    sparklines: bool = True,
) -> OverviewPage:
    """The overview: one row per visible topic, worst first by default, one page of it.

    Sparklines (lag over the last hour) are fetched for the rows of this page only.
    """
    q = q.strip()[:200]
    snap, unreadable = snapshot_read(cluster)
    health = _collector_health(cluster)
    if snap is None:
        return OverviewPage(
            cluster,
            False,
            None,
            None,
            None,
            Paged([], 1, per_page, 0),
            collector=health,
            unreadable=unreadable,
        )
    rows = _visible_rows(snap, cluster, user)
    counts: dict[str, int] = {status.value: 0 for status in WORST_FIRST}
    for row in rows:
        counts[row["status"]] += 1
    total_topics = len(rows)
    if problems:
        rows = [r for r in rows if r["status"] != Status.OK or r["dlq_growth"] > 0]
    if q:
        needle = q.lower()
        rows = [r for r in rows if needle in r["topic"].lower()]
    rows.sort(key=_sort_key(sort), reverse=(order == "desc"))
    pages = max(1, math.ceil(len(rows) / per_page))
    page = min(max(1, page), pages)
    items = rows[(page - 1) * per_page : page * per_page]
    if sparklines and items:
        series = console_store().series_many(
            cluster, "lag", [r["topic"] for r in items], since_ms=now_ms() - SPARK_WINDOW_MS
        )
        for row in items:
            row["sparkline"] = charts.sparkline_points(series.get(row["topic"]) or [])
    return OverviewPage(
        cluster=cluster,
        snapshot_found=True,
        taken_at_ms=snap.taken_at_ms,
        age_ms=snapshot_age_ms(snap),
        elapsed_ms=snap.elapsed_ms,
        rows=Paged(items, page, per_page, len(rows)),
        counts=counts,
        topics_total=total_topics,
        sort=sort,
        order=order,
        only_problems=problems,
        q=q,
        collector=health,
        replica=msgspec.to_builtins(snap.replica) if snap.replica else None,
    )


def _collector_health(cluster: str) -> dict[str, Any]:
    try:
        health = console_store().collector_health_get()
    except Exception:  # the page still renders; the collectors page shows the detail
        return {}
    value = health.get(cluster) if isinstance(health, Mapping) else None
    return dict(value) if isinstance(value, Mapping) else {}


def topics_get(cluster: str, *, user: Any, limit: int, offset: int) -> dict[str, Any]:
    """Visible topics of the snapshot as overview rows, by name, a slice of them."""
    snap = snapshot_get(cluster)
    rows = (
        [] if snap is None else sorted(_visible_rows(snap, cluster, user), key=lambda r: r["topic"])
    )
    return {
        "cluster": cluster,
        "snapshot": snap is not None,
        "taken_at_ms": snap.taken_at_ms if snap is not None else None,
        "total": len(rows),
        "limit": limit,
        "offset": offset,
        "topics": [row_json(r) for r in rows[offset : offset + limit]],
    }
