"""The topic page: one topic's groups, partitions, leases and drain estimates, its charts,
its group names, and its live lag.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, NotRequired, TypedDict

import msgspec

from dashboard import charts, clusters
from dashboard.clusters import console_store
from dashboard.collectors.series import MEMORY_METRIC, PARTITION_METRIC
from dashboard.selectors.pages.overview import OverviewRow, overview_row, row_json
from dashboard.selectors.pages.params import NotFoundError, ParamError, mq_refusals
from dashboard.selectors.pages.partitions import partitions_get
from dashboard.selectors.pages.snapshot import (
    SnapshotRead,
    now_ms,
    pipeline_mark,
    snapshot_age_ms,
    snapshot_get,
    snapshot_read,
    snapshot_topic_get,
    topic_visible_require,
)
from dashboard.selectors.pages.timeline import TimelineFilter, timeline_events
from dashboard.status.drain import Drain, drain_estimate
from mqcore.admin.partitions import last_ids
from mqcore.errors import InvalidArgumentError, MQError, UnknownTopicError
from mqcore.models import ConsumerInfo, GroupLag, LeaseInfo, PartitionLag

__all__ = [
    "GroupRow",
    "PartitionRow",
    "TopicDetail",
    "fill_last_ids",
    "group_lags",
    "group_list",
    "known_group",
    "lag_get",
    "partition_lag_series",
    "topic_charts_get",
    "topic_get",
    "topic_json",
    "topic_page",
]

DRAIN_WINDOW_MS = 15 * 60_000
PARTITION_TRACES = 24  # per-partition lag traces on the chart: the most lagging ones
CHART_EVENTS = 200  # newest incident events drawn on the topic charts


def _live_topic_exists(cluster: str, topic: str) -> bool:
    try:
        clusters.admin(cluster).partition_count(topic)
    except (UnknownTopicError, InvalidArgumentError):
        return False
    return True


class PartitionRow(TypedDict):
    """A group's partition on the topic page: the snapshot's fields, its lease and holders."""

    partition: int
    last_delivered_id: str
    lag: int | None
    lag_ms: int | None
    pending: int
    lag_exact: bool
    exactness: str  # "unknown" when the lag is
    lag_reason: str
    oldest_pending_ms: int | None
    entries_read: int | None
    length: int
    last_id: str | None  # None: not read by the collector (the API reads it live)
    oldest_pending_id: str | None
    oldest_pending_consumer: str | None  # the consumer holding the oldest pending entry
    status: str
    status_reason: str
    group: str
    owner: str | None
    ttl_ms: int | None
    epoch: int | None
    holders: list[str]  # consumers whose heartbeat names the partition
    pipeline: Any  # the group's pipeline mark as JSON data, or None


class GroupRow(TypedDict):
    """A group on the topic page: its totals, status, window, drain estimate, partitions."""

    group: str
    lag: int | None
    lag_ms: int | None
    pending: int
    lag_exact: bool
    status: str
    status_reason: str
    complete: float  # share of partitions with a full status window
    complete_partitions: int
    partitions_total: int
    consumers: int
    pipeline: Any  # the pipeline mark as JSON data, or None
    drain: Any  # the drain estimate as JSON data
    partitions: list[PartitionRow]


class TopicDetail(TypedDict):
    """The topic page's data (and the topic API's); a topic the collector has not seen (or
    no readable snapshot) has only ``collected`` False and no rows."""

    topic: str
    collected: bool
    snapshot_found: bool
    unreadable: str | None  # why the stored snapshot was refused
    row: OverviewRow | None
    groups: list[GroupRow]
    rows: list[PartitionRow]
    consumers: Any  # JSON data of the consumers, the leases, the retry backlog
    leases: Any
    retry: NotRequired[Any]
    partition_lengths: NotRequired[list[int]]
    partition_last_ids: NotRequired[list[str | None]]
    error: NotRequired[str | None]
    taken_at_ms: NotRequired[int]
    age_ms: int | None


def _uncollected(topic: str, read: SnapshotRead) -> TopicDetail:
    """The detail of a topic that exists in Redis but not in the snapshot (not yet, or no
    snapshot is readable)."""
    return {
        "topic": topic,
        "collected": False,
        "snapshot_found": read.snapshot is not None,
        "unreadable": read.unreadable,
        "row": None,
        "groups": [],
        "rows": [],
        "consumers": [],
        "leases": [],
        "age_ms": snapshot_age_ms(read.snapshot),
    }


def _partition_row(
    p: PartitionLag, group: str, lease: LeaseInfo | None, holders: list[str], pipeline: Any
) -> PartitionRow:
    return {
        "partition": p.partition,
        "last_delivered_id": p.last_delivered_id,
        "lag": p.lag,
        "lag_ms": p.lag_ms,
        "pending": p.pending,
        "lag_exact": p.lag_exact,
        "exactness": "unknown" if p.lag is None else p.exactness.value,
        "lag_reason": p.lag_reason,
        "oldest_pending_ms": p.oldest_pending_ms,
        "entries_read": p.entries_read,
        "length": p.length,
        "last_id": p.last_id,
        "oldest_pending_id": p.oldest_pending_id,
        "oldest_pending_consumer": p.oldest_pending_consumer,
        "status": p.status.value,
        "status_reason": p.status_reason,
        "group": group,
        "owner": lease.owner if lease else None,
        "ttl_ms": lease.ttl_ms if lease else None,
        "epoch": lease.epoch if lease else None,
        "holders": holders,
        "pipeline": pipeline,
    }


def _group_row(g: GroupLag, consumers: list[ConsumerInfo], drain: Drain) -> GroupRow:
    total = len(g.partitions)
    return {
        "group": g.group,
        "lag": g.lag,
        "lag_ms": g.lag_ms,
        "pending": g.pending,
        "lag_exact": g.lag_exact,
        "status": g.status.value,
        "status_reason": g.status_reason,
        "complete": g.complete,
        "complete_partitions": round(g.complete * total),
        "partitions_total": total,
        "consumers": len(consumers),
        "pipeline": msgspec.to_builtins(pipeline_mark(g)),
        "drain": {**asdict(drain), "ranged": drain.ranged},
        "partitions": [],
    }


def topic_get(cluster: str, topic: str, *, user: Any) -> TopicDetail:
    """Topic detail from the snapshot: rows per group x partition, leases, drain estimates.

    Raises NotFoundError when the topic is neither in the snapshot nor in Redis.
    ``collected`` is False when the topic exists but the collector has not seen it yet
    (or its snapshot is unreadable: ``unreadable`` says why).
    """
    topic_visible_require(user, cluster, topic)
    read = snapshot_read(cluster)
    snap = read.snapshot
    data = snapshot_topic_get(snap, topic)
    if snap is None or data is None:
        if not _live_topic_exists(cluster, topic):
            raise NotFoundError(f"unknown topic {topic!r}")
        return _uncollected(topic, read)
    owners = {(lease.group, lease.partition): lease for lease in data.leases}
    consumers_by_group: dict[str, list[ConsumerInfo]] = {}
    for c in data.consumers:
        consumers_by_group.setdefault(c.group, []).append(c)
    since = now_ms() - DRAIN_WINDOW_MS
    names = [g.group for g in data.groups]
    lag_series = (
        console_store().series_many(cluster, "lag", [f"{topic}/{g}" for g in names], since_ms=since)
        if names
        else {}
    )
    groups = []
    rows = []
    for g in data.groups:
        consumers = consumers_by_group.get(g.group, [])
        drain = drain_estimate(
            lag_series.get(f"{topic}/{g.group}") or [], current=g.lag, status=g.status.value
        )
        group_row = _group_row(g, consumers, drain)
        for p in g.partitions:
            holders = [c.name for c in consumers if p.partition in c.partitions_held]
            lease = owners.get((g.group, p.partition))
            row = _partition_row(p, g.group, lease, holders, group_row["pipeline"])
            group_row["partitions"].append(row)
            rows.append(row)
        groups.append(group_row)
    return {
        "topic": topic,
        "collected": True,
        "snapshot_found": True,
        "unreadable": None,
        "row": overview_row(data),
        "groups": groups,
        "rows": rows,
        "consumers": msgspec.to_builtins([c for cs in consumers_by_group.values() for c in cs]),
        "leases": msgspec.to_builtins(list(owners.values())),
        "retry": msgspec.to_builtins(data.retry),
        "partition_lengths": data.partition_lengths,
        "partition_last_ids": data.partition_last_ids,
        "error": data.error,
        "taken_at_ms": snap.taken_at_ms,
        "age_ms": snapshot_age_ms(snap),
    }


def fill_last_ids(cluster: str, data: TopicDetail) -> TopicDetail:
    """``data`` (:func:`topic_get`) with the last id of each partition row that has none,
    read live: the collector reads no partition's last id that a group's position does not
    tell (its last-generated id, one ``XINFO STREAM`` per partition, only where someone
    looks). They stay None when Redis cannot be read."""
    missing = sorted({r["partition"] for r in data["rows"] if r["last_id"] is None})
    if not missing:
        return data
    admin = clusters.admin(cluster)
    try:
        found = last_ids(admin.client, admin.keys, str(data["topic"]), missing)
    except MQError:
        return data
    for row in data["rows"]:
        if row["last_id"] is None:
            row["last_id"] = found.get(row["partition"])
    return data


def topic_page(
    cluster: str, t: TopicDetail, *, user: Any, window: str, polled: bool
) -> dict[str, Any]:
    """The topic page's context: the topic, its charts over ``window`` and (not when
    ``polled``: its hot-key sample would vanish) the partition panel."""
    topic, groups = t["topic"], [g["group"] for g in t["groups"]]
    return {
        "t": t,
        "window": window,
        "windows": list(charts.WINDOWS),
        "now_ms": now_ms(),
        "figures": topic_charts_get(cluster, topic, groups=groups, window=window),
        "parts": None if polled else partitions_get(cluster, topic, user=user),
    }


def topic_json(cluster: str, data: TopicDetail) -> Any:
    """The topic API's answer: the overview row's fields, the groups (their partitions
    without the group's name again), the retry backlog, leases and consumers."""
    data = fill_last_ids(cluster, data)
    groups = [
        {k: v for k, v in g.items() if k != "partitions"}
        | {"partitions": [{k: v for k, v in p.items() if k != "group"} for p in ps]}
        for g in data["groups"]
        for ps in [g["partitions"]]
    ]
    row = row_json(data.get("row") or {})  # type: ignore[arg-type]
    row.pop("topic", None)
    return msgspec.to_builtins(
        {
            "cluster": cluster,
            "topic": data["topic"],
            "collected": data["collected"],
            "taken_at_ms": data.get("taken_at_ms"),
            **row,
            "retry": data.get("retry") or {},
            "error": data.get("error"),
            "groups": groups,
            "leases": data.get("leases") or [],
            "consumers": data.get("consumers") or [],
        },
        str_keys=True,
    )


def topic_charts_get(
    cluster: str, topic: str, *, groups: list[str], window: str = "1h"
) -> dict[str, dict[str, Any]]:
    """Plotly figures for the topic page over ``window`` (1h/6h/24h/7d), with the topic's
    incident events of the window as markers (the caller has checked the topic)."""
    try:
        span = charts.window_ms(window)
    except ValueError as exc:
        raise ParamError(str(exc)) from None
    until = now_ms()
    since = until - span
    entities = [f"{topic}/{g}" for g in groups]
    store = console_store()
    lag = store.series_many(cluster, "lag", entities, since_ms=since) if entities else {}
    lag_ms = store.series_many(cluster, "lag_ms", entities, since_ms=since) if entities else {}
    consumed = (
        store.series_many(cluster, "consumed_total", entities, since_ms=since) if entities else {}
    )
    produced = store.series_get(cluster, "produced_total", topic, since_ms=since)
    dlq = store.series_get(cluster, "dlq_length", topic, since_ms=since)
    memory = store.series_get(cluster, MEMORY_METRIC, topic, since_ms=since)
    name = {f"{topic}/{g}": g for g in groups}
    rates: dict[str, list[charts.Point]] = {"produced": charts.rate_from_counter(produced)}
    for entity, pts in consumed.items():
        rates[f"consumed by {name.get(entity, entity)}"] = charts.rate_from_counter(pts)
    lag_s = {name.get(e, e): [(t, v / 1000.0) for t, v in pts] for e, pts in lag_ms.items()}
    traces, more = partition_lag_series(cluster, topic, groups=groups, since_ms=since)
    per_partition = {f"{g} p{p}": pts for g, p, pts in traces}
    partition_title = "Lag per partition (messages, 1-minute samples)"
    if more:
        partition_title += f": the {len(per_partition)} most lagging of {len(per_partition) + more}"
    window_args: dict[str, Any] = {"since_ms": since, "until_ms": until}
    during = TimelineFilter(topic=topic, since_ms=since, until_ms=until)
    events, _ = timeline_events(cluster, during, limit=CHART_EVENTS)
    figures = {
        "lag": charts.line_figure(
            "Lag (messages)",
            {name.get(e, e): pts for e, pts in lag.items()},
            y_title="messages",
            **window_args,
        ),
        "lag_ms": charts.line_figure("Lag in time", lag_s, y_title="seconds", **window_args),
        "rates": charts.line_figure(
            "Produce / consume rate", rates, y_title="messages/s", **window_args
        ),
        "dlq": charts.line_figure(
            "DLQ depth", {"dlq": dlq}, y_title="letters", step=True, **window_args
        ),
        "memory": charts.line_figure(
            "Memory of the partition streams (MiB, MEMORY USAGE samples)",
            {"memory": [(t, v / 2**20) for t, v in memory]},
            y_title="MiB",
            **window_args,
        ),
        "partition_lag": charts.line_figure(
            partition_title, per_partition, y_title="messages", **window_args
        ),
    }
    return {name: charts.with_events(fig, events) for name, fig in figures.items()}


def partition_lag_series(
    cluster: str,
    topic: str,
    *,
    groups: list[str],
    since_ms: int,
    limit: int = PARTITION_TRACES,
) -> tuple[list[tuple[str, int, list[charts.Point]]], int]:
    """Per-partition lag traces ``(group, partition, points)`` of the ``limit`` partitions
    of ``groups`` with the highest lag in the latest snapshot, and how many were left out."""
    data = snapshot_topic_get(snapshot_get(cluster), topic)
    wanted = set(groups)
    candidates: list[tuple[int, str, int]] = [
        (p.lag if p.lag is not None else -1, g.group, p.partition)
        for g in (data.groups if data is not None else ())
        if g.group in wanted
        for p in g.partitions
    ]
    candidates.sort(key=lambda c: (-c[0], c[1], c[2]))
    chosen = candidates[:limit]
    entities = [f"{topic}/{g}/{p}" for _, g, p in chosen]
    series = (
        console_store().series_many(cluster, PARTITION_METRIC, entities, since_ms=since_ms)
        if entities
        else {}
    )
    traces = [(g, p, series.get(f"{topic}/{g}/{p}") or []) for _, g, p in chosen]
    return traces, len(candidates) - len(chosen)


def group_list(cluster: str, topic: str) -> list[str]:
    """Group names of ``topic`` from the snapshot, or live when the snapshot lacks the topic."""
    data = snapshot_topic_get(snapshot_get(cluster), topic)
    if data is not None:
        return [g.group for g in data.groups]
    try:
        return clusters.admin(cluster).groups(topic)
    except (UnknownTopicError, InvalidArgumentError):
        raise NotFoundError(f"unknown topic {topic!r}") from None


def known_group(
    cluster: str, topic: str, group: str, *, first: bool = False
) -> tuple[list[str], str]:
    """The topic's groups, and ``group`` when it is one of them (empty: none, or the first)."""
    groups = group_list(cluster, topic)
    group = group or (groups[0] if first and groups else "")
    if group and group not in groups:
        raise NotFoundError(f"unknown group {group!r} of topic {topic!r}")
    return groups, group


def lag_get(cluster: str, topic: str, *, user: Any, group: str = "") -> dict[str, Any]:
    """:func:`group_lags` as the API's answer (``mqcore lag --json``'s groups)."""
    lags = group_lags(cluster, topic, user=user, group=group or None)
    return {"topic": topic, "groups": msgspec.to_builtins(lags, str_keys=True)}


def group_lags(cluster: str, topic: str, *, user: Any, group: str | None = None) -> list[GroupLag]:
    """Live lag of ``topic`` (all groups, or one) from mqcore (bounded per partition)."""
    topic_visible_require(user, cluster, topic)
    with mq_refusals(topic, group=group):
        return clusters.admin(cluster).lag(topic, group)
