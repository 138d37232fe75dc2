"""The topic page: one topic's groups, partitions, leases and drain estimates, its charts,
its group names, and its live lag.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from dashboard import charts, clusters
from dashboard.clusters import console_store
from dashboard.collectors.series import MEMORY_METRIC, PARTITION_METRIC
from dashboard.selectors.pages.overview import overview_row
from dashboard.selectors.pages.params import NotFoundError, ParamError
from dashboard.selectors.pages.snapshot import (
    now_ms,
    num,
    pipeline_mark,
    snapshot_age_ms,
    snapshot_get,
    snapshot_topic_get,
    status_name,
    to_int,
    topic_visible_require,
)
from dashboard.selectors.pages.timeline import timeline_events
from dashboard.status.drain import drain_estimate
from mqcore.admin.partitions import last_ids
from mqcore.errors import InvalidArgumentError, MQError, UnknownGroupError, UnknownTopicError

__all__ = [
    "fill_last_ids",
    "group_list",
    "lag_get",
    "partition_lag_series",
    "topic_charts_get",
    "topic_get",
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


def _uncollected(topic: str, snap: Mapping[str, Any] | None) -> dict[str, Any]:
    """The detail of a topic that exists in Redis but not yet in the snapshot."""
    return {
        "topic": topic,
        "collected": False,
        "snapshot_found": snap is not None,
        "groups": [],
        "rows": [],
        "row": None,
        "consumers": [],
        "leases": [],
        "drain": {},
        "age_ms": snapshot_age_ms(snap),
    }


def _partition_row(
    p: Mapping[str, Any],
    name: str,
    lease: Mapping[str, Any],
    consumers: list[dict[str, Any]],
    pipeline: dict[str, Any] | None = None,
) -> dict[str, Any]:
    pnum = to_int(p.get("partition"), -1)
    holders = [c["name"] for c in consumers if pnum in (c.get("partitions_held") or [])]
    exactness = str(p.get("exactness") or ("exact" if p.get("lag_exact") else "counted"))
    if p.get("lag") is None:
        exactness = "unknown"
    return {
        **dict(p),
        "group": name,
        "partition": pnum,
        "exactness": exactness,
        "owner": lease.get("owner"),
        "ttl_ms": lease.get("ttl_ms"),
        "epoch": lease.get("epoch"),
        "holders": holders,
        "pipeline": pipeline,
        "status": status_name(p.get("status")),
        "status_reason": str(p.get("status_reason") or ""),
    }


def _completeness(g: Mapping[str, Any]) -> dict[str, Any]:
    """``complete`` (share 0..1 of partitions with a full status window, None before it
    was stored) and ``complete_partitions`` of ``partitions_total``, for the page."""
    total = len([p for p in g.get("partitions") or [] if isinstance(p, Mapping)])
    raw = g.get("complete")
    share = float(raw) if isinstance(raw, int | float) and not isinstance(raw, bool) else None
    return {
        "complete": share,
        "complete_partitions": round(share * total) if share is not None else None,
        "partitions_total": total,
    }


def topic_get(cluster: str, topic: str, *, user: Any) -> dict[str, Any]:
    """Topic detail from the snapshot: rows per group x partition, leases, drain estimates.

    Raises NotFoundError when the topic is neither in the snapshot nor in Redis.
    ``collected`` is False when the topic exists but the collector has not seen it yet.
    """
    topic_visible_require(user, cluster, topic)
    snap = snapshot_get(cluster)
    data = snapshot_topic_get(snap, topic)
    if data is None:
        if not _live_topic_exists(cluster, topic):
            raise NotFoundError(f"unknown topic {topic!r}")
        return _uncollected(topic, snap)
    owners = {
        (str(lease.get("group")), to_int(lease.get("partition"), -1)): lease
        for lease in data.get("leases") or []
        if isinstance(lease, Mapping)
    }
    consumers_by_group: dict[str, list[dict[str, Any]]] = {}
    for c in data.get("consumers") or []:
        if isinstance(c, Mapping):
            consumers_by_group.setdefault(str(c.get("group")), []).append(dict(c))
    since = now_ms() - DRAIN_WINDOW_MS
    names = [str(g.get("group", "")) for g in data.get("groups") or []]
    lag_series = (
        console_store().series_many(cluster, "lag", [f"{topic}/{g}" for g in names], since_ms=since)
        if names
        else {}
    )
    groups = []
    rows = []
    for g in data.get("groups") or []:
        name = str(g.get("group", ""))
        consumers = consumers_by_group.get(name, [])
        status = status_name(g.get("status"))
        drain = drain_estimate(
            lag_series.get(f"{topic}/{name}") or [], current=num(g.get("lag")), status=status
        )
        group_row = {
            "group": name,
            "lag": g.get("lag"),
            "lag_ms": g.get("lag_ms"),
            "pending": to_int(g.get("pending")),
            "lag_exact": bool(g.get("lag_exact")),
            "status": status,
            "status_reason": str(g.get("status_reason") or ""),
            **_completeness(g),
            "consumers": len(consumers),
            "pipeline": pipeline_mark(g),
            "drain": {**asdict(drain), "ranged": drain.ranged},
            "partitions": [],
        }
        for p in g.get("partitions") or []:
            if not isinstance(p, Mapping):
                continue
            lease = owners.get((name, to_int(p.get("partition"), -1))) or {}
            row = _partition_row(p, name, lease, consumers, group_row["pipeline"])
            group_row["partitions"].append(row)
            rows.append(row)
        groups.append(group_row)
    return {
        "topic": topic,
        "collected": True,
        "snapshot_found": True,
        "row": overview_row(data),
        "groups": groups,
        "rows": rows,
        "consumers": [c for cs in consumers_by_group.values() for c in cs],
        "leases": list(owners.values()),
        "retry": data.get("retry") or {},
        "partition_lengths": data.get("partition_lengths") or [],
        "partition_last_ids": data.get("partition_last_ids") or [],
        "error": data.get("error"),
        "taken_at_ms": to_int((snap or {}).get("taken_at_ms")) or None,
        "age_ms": snapshot_age_ms(snap),
    }


def fill_last_ids(cluster: str, data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (:func:`topic_get`) with the last id of each partition row that has none,
    read live: the collector reads no partition's last id that a group's position does not
    tell (its last-generated id, one ``XINFO STREAM`` per partition, only where someone
    looks). They stay None when Redis cannot be read."""
    missing = sorted(
        {to_int(r.get("partition"), -1) for r in data.get("rows") or [] if r.get("last_id") is None}
        - {-1}
    )
    if not missing:
        return data
    admin = clusters.admin(cluster)
    try:
        found = last_ids(admin.client, admin.keys, str(data["topic"]), missing)
    except MQError:
        return data
    for row in data.get("rows") or []:
        if row.get("last_id") is None:
            row["last_id"] = found.get(to_int(row.get("partition"), -1))
    return data


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
    events, _ = timeline_events(
        cluster, topic=topic, since_ms=since, until_ms=until, limit=CHART_EVENTS
    )
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
    data = snapshot_topic_get(snapshot_get(cluster), topic) or {}
    wanted = set(groups)
    candidates: list[tuple[float, str, int]] = []
    for g in data.get("groups") or []:
        if not isinstance(g, Mapping) or str(g.get("group", "")) not in wanted:
            continue
        for p in g.get("partitions") or []:
            if isinstance(p, Mapping):
                lag = num(p.get("lag"))
                candidates.append(
                    (lag if lag is not None else -1.0, str(g["group"]), to_int(p.get("partition")))
                )
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
        return [str(g.get("group", "")) for g in data.get("groups") or []]
    try:
        return clusters.admin(cluster).groups(topic)
    except (UnknownTopicError, InvalidArgumentError):
        raise NotFoundError(f"unknown topic {topic!r}") from None


def lag_get(cluster: str, topic: str, *, user: Any, group: str | None = None) -> list[Any]:
    """Live lag of ``topic`` (all groups, or one) from mqcore (bounded per partition)."""
    topic_visible_require(user, cluster, topic)
    try:
        return list(clusters.admin(cluster).lag(topic, group))
    except UnknownTopicError:
        raise NotFoundError(f"unknown topic {topic!r}") from None
    except UnknownGroupError:
        raise NotFoundError(f"unknown group {group!r} of topic {topic!r}") from None
    except InvalidArgumentError as exc:
        raise ParamError(str(exc)) from None
