"""Reads behind the console's pages and their JSON twins.

Overview and topic pages render from the collectors' latest snapshot and time
series (``dashboard.store``: cheap, bounded); pending, leases and one message go
live to the MQ Redis through ``mqcore.admin`` (bounded by mqcore). Every
function takes the cluster name first and returns plain data; unknown clusters,
topics, groups and messages raise ``Http404`` subclasses with a message that is
safe to show.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from django.conf import settings
from django.http import Http404

from dashboard import charts, clusters, store
from dashboard.clusters import cluster_config
from dashboard.masking import MASK, mask_fields, mask_headers
from dashboard.permissions import payload_visible, topic_visible
from mqcore.errors import (
    InvalidArgumentError,
    UnknownGroupError,
    UnknownMessageError,
    UnknownPartitionError,
    UnknownTopicError,
)
from mqcore.keys import validate_name
from mqcore.models import ConsumerInfo, LeaseInfo, Message, PendingPage

__all__ = [
    "OVERVIEW_SORTS",
    "PAGE_SIZE",
    "PENDING_SORTS",
    "NotFoundError",
    "OverviewPage",
    "Paged",
    "ParamError",
    "leases_get",
    "message_get",
    "overview_get",
    "pending_get",
    "snapshot_age_ms",
    "topic_charts_get",
    "topic_get",
    "topic_list",
]

PAGE_SIZE = 50
MAX_PAGE_SIZE = 500
STATUS_ORDER = {"ERR": 0, "STOP": 1, "STALL": 2, "WARN": 3, "UNKNOWN": 4, "OK": 5}
OVERVIEW_SORTS = ("status", "topic", "lag", "lag_ms", "pending", "oldest", "dlq", "length")
PENDING_SORTS = ("idle", "count")
ORDERS = ("desc", "asc")
SPARK_WINDOW_MS = 3_600_000
DRAIN_WINDOW_MS = 15 * 60_000
PENDING_MAX_LIMIT = 500


class NotFoundError(Http404):
    """Raised when a topic, group, partition or message named in a request does not exist."""


class ParamError(ValueError):
    """Raised when a filter, sort or paging parameter is invalid (the API answers 400)."""


def now_ms() -> int:
    return int(time.time() * 1000)


# --- parameter parsing (shared by pages and API) ------------------------------


def parse_int(
    raw: str | None, name: str, *, default: int | None, minimum: int = 0, maximum: int | None = None
) -> int | None:
    """An int query parameter within bounds; ParamError with a clear message otherwise."""
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ParamError(f"{name} must be an integer") from None
    if value < minimum or (maximum is not None and value > maximum):
        upper = f" and {maximum}" if maximum is not None else ""
        raise ParamError(f"{name} must be between {minimum}{upper}")
    return value


def parse_choice(raw: str | None, name: str, choices: Iterable[str], default: str) -> str:
    if raw is None or raw == "":
        return default
    allowed = tuple(choices)
    if raw not in allowed:
        raise ParamError(f"{name} must be one of {', '.join(allowed)}")
    return raw


# --- snapshot helpers ---------------------------------------------------------


def _snapshot(cluster: str) -> dict[str, Any] | None:
    cluster_config(cluster)  # raises UnknownClusterError (404) for unknown names
    snap = store.snapshot_get(cluster)
    return snap if isinstance(snap, dict) else None


def snapshot_age_ms(snapshot: Mapping[str, Any] | None) -> int | None:
    if not snapshot:
        return None
    taken = snapshot.get("taken_at_ms")
    return max(0, now_ms() - int(taken)) if isinstance(taken, int | float) else None


def _num(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        n = float(value)
    except (TypeError, ValueError):
        return None
    return n if math.isfinite(n) else None


def _int(value: Any, default: int = 0) -> int:
    n = _num(value)
    return default if n is None else int(n)


def _status(value: Any) -> str:
    name = str(value or "UNKNOWN").upper()
    return name if name in STATUS_ORDER else "UNKNOWN"


def _topic_exactness(topic: Mapping[str, Any]) -> str:
    """Worst lag exactness over every partition of every group of ``topic``."""
    worst = "exact"
    rank = {"exact": 0, "counted": 1, "approximate": 2, "unknown": 3}
    for group in topic.get("groups") or []:
        for part in group.get("partitions") or []:
            ex = str(part.get("exactness") or ("exact" if part.get("lag_exact") else "counted"))
            if part.get("lag") is None:
                ex = "unknown"
            if rank.get(ex, 3) > rank[worst]:
                worst = ex
    return worst


def _lag_reasons(topic: Mapping[str, Any]) -> str:
    reasons = []
    for group in topic.get("groups") or []:
        for part in group.get("partitions") or []:
            reason = part.get("lag_reason")
            if reason:
                reasons.append(f"{group.get('group')}/p{part.get('partition')}: {reason}")
    return "; ".join(reasons[:5]) + (" …" if len(reasons) > 5 else "")


def _listable(topic: Any) -> bool:
    """A snapshot entry that can become a row (a dict with a valid topic name)."""
    if not isinstance(topic, Mapping):
        return False
    try:
        validate_name("topic", topic.get("topic"))  # type: ignore[arg-type]
    except ValueError:
        return False
    return True


def overview_row(topic: Mapping[str, Any]) -> dict[str, Any]:
    """One overview row from a snapshot topic dict; tolerant of missing fields."""
    groups = topic.get("groups") or []
    retry = topic.get("retry") or {}
    lag = _num(topic.get("lag"))
    if lag is None and groups and "lag" not in topic:
        lags = [_num(g.get("lag")) for g in groups]
        lag = None if any(v is None for v in lags) else sum(v or 0 for v in lags)
    status = _status(topic.get("status"))
    if topic.get("error"):
        status = "ERR"
    return {
        "topic": str(topic.get("topic", "")),
        "partitions": _int(topic.get("partitions")),
        "length": _int(topic.get("length")),
        "groups": len(groups),
        "group_names": [str(g.get("group", "")) for g in groups],
        "lag": None if lag is None else int(lag),
        "lag_ms": None if _num(topic.get("lag_ms")) is None else _int(topic.get("lag_ms")),
        "exactness": _topic_exactness(topic),
        "lag_reason": _lag_reasons(topic),
        "pending": _int(topic.get("pending")),
        "oldest_pending_ms": (
            None
            if _num(topic.get("oldest_pending_ms")) is None
            else _int(topic.get("oldest_pending_ms"))
        ),
        "dlq_length": _int(topic.get("dlq_length")),
        "dlq_growth": _int(topic.get("dlq_growth")),
        "retry_count": _int(retry.get("count") if isinstance(retry, Mapping) else 0),
        "status": status,
        "status_reason": str(topic.get("status_reason") or topic.get("error") or ""),
        "error": topic.get("error"),
    }


def _sort_key(sort: str) -> Any:
    big = float("inf")

    def nullable(name: str) -> Any:
        # Unknown values sort as the largest (worst) so they are never hidden at the end.
        return lambda row: (big if row[name] is None else row[name], row["topic"])

    keys: dict[str, Any] = {
        "status": lambda row: (
            -STATUS_ORDER[row["status"]],
            big if row["lag"] is None else row["lag"],
            row["dlq_growth"],
            row["topic"],
        ),
        "topic": lambda row: row["topic"],
        "lag": nullable("lag"),
        "lag_ms": nullable("lag_ms"),
        "pending": lambda row: (row["pending"], row["topic"]),
        "oldest": nullable("oldest_pending_ms"),
        "dlq": lambda row: (row["dlq_length"], row["dlq_growth"], row["topic"]),
        "length": lambda row: (row["length"], row["topic"]),
    }
    return keys[sort]


@dataclass
class Paged:
    """A page of rows plus what a pager needs."""

    items: list[Any]
    page: int
    per_page: int
    total: int

    @property
    def pages(self) -> int:
        return max(1, math.ceil(self.total / self.per_page))

    @property
    def has_next(self) -> bool:
        return self.page < self.pages

    @property
    def has_previous(self) -> bool:
        return self.page > 1

    @property
    def start(self) -> int:
        return 0 if self.total == 0 else (self.page - 1) * self.per_page + 1

    @property
    def end(self) -> int:
        return min(self.total, self.page * self.per_page)


@dataclass
class OverviewPage:
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


def overview_get(
    cluster: str,
    *,
    user: Any,
    sort: str = "status",
    order: str = "desc",
    only_problems: bool = False,
    q: str = "",
    page: int = 1,
    per_page: int = PAGE_SIZE,
    sparklines: bool = True,
) -> OverviewPage:
    """The overview: one row per visible topic, worst first by default, one page of it.

    Sparklines (lag over the last hour) are fetched for the rows of this page only.
    """
    sort = parse_choice(sort, "sort", OVERVIEW_SORTS, "status")
    order = parse_choice(order, "order", ORDERS, "desc")
    snap = _snapshot(cluster)
    health = _collector_health(cluster)
    if snap is None:
        return OverviewPage(
            cluster, False, None, None, None, Paged([], 1, per_page, 0), collector=health
        )
    rows = [
        overview_row(t)
        for t in snap.get("topics") or []
        if _listable(t) and topic_visible(user, cluster, str(t["topic"]))
    ]
    counts: dict[str, int] = dict.fromkeys(STATUS_ORDER, 0)
    for row in rows:
        counts[row["status"]] += 1
    total_topics = len(rows)
    if only_problems:
        rows = [r for r in rows if r["status"] != "OK" or r["dlq_growth"] > 0]
    if q:
        needle = q.lower()
        rows = [r for r in rows if needle in r["topic"].lower()]
    rows.sort(key=_sort_key(sort), reverse=(order == "desc"))
    pages = max(1, math.ceil(len(rows) / per_page))
    page = min(max(1, page), pages)
    items = rows[(page - 1) * per_page : page * per_page]
    if sparklines and items:
        series = store.series_many(
            cluster, "lag", [r["topic"] for r in items], since_ms=now_ms() - SPARK_WINDOW_MS
        )
        for row in items:
            row["sparkline"] = charts.sparkline_points(series.get(row["topic"]) or [])
    return OverviewPage(
        cluster=cluster,
        snapshot_found=True,
        taken_at_ms=_int(snap.get("taken_at_ms")) or None,
        age_ms=snapshot_age_ms(snap),
        elapsed_ms=_num(snap.get("elapsed_ms")),
        rows=Paged(items, page, per_page, len(rows)),
        counts=counts,
        topics_total=total_topics,
        sort=sort,
        order=order,
        only_problems=only_problems,
        q=q,
        collector=health,
    )


def _collector_health(cluster: str) -> dict[str, Any]:
    try:
        health = store.collector_health_get()
    except Exception:  # the page still renders; the collectors page shows the detail
        return {}
    value = health.get(cluster) if isinstance(health, Mapping) else None
    return dict(value) if isinstance(value, Mapping) else {}


def topic_list(cluster: str, *, user: Any) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """Visible topics of the snapshot as overview rows (unsorted), and the snapshot."""
    snap = _snapshot(cluster)
    if snap is None:
        return [], None
    rows = [
        overview_row(t)
        for t in snap.get("topics") or []
        if _listable(t) and topic_visible(user, cluster, str(t["topic"]))
    ]
    rows.sort(key=lambda r: r["topic"])
    return rows, snap


# --- topic --------------------------------------------------------------------


def _find_topic(snap: Mapping[str, Any] | None, topic: str) -> dict[str, Any] | None:
    for t in (snap or {}).get("topics") or []:
        if isinstance(t, Mapping) and t.get("topic") == topic:
            return dict(t)
    return None


def _require_visible(user: Any, cluster: str, topic: str) -> None:
    # A topic the user may not see answers exactly like a topic that does not exist.
    if not topic_visible(user, cluster, topic):
        raise NotFoundError(f"unknown topic {topic!r}")


def _live_topic_exists(cluster: str, topic: str) -> bool:
    try:
        clusters.admin(cluster).partition_count(topic)
    except (UnknownTopicError, InvalidArgumentError):
        return False
    return True


def topic_get(cluster: str, topic: str, *, user: Any) -> dict[str, Any]:
    """Topic detail from the snapshot: rows per group x partition, leases, drain estimates.

    Raises NotFoundError when the topic is neither in the snapshot nor in Redis.
    ``collected`` is False when the topic exists but the collector has not seen it yet.
    """
    _require_visible(user, cluster, topic)
    snap = _snapshot(cluster)
    data = _find_topic(snap, topic)
    if data is None:
        if not _live_topic_exists(cluster, topic):
            raise NotFoundError(f"unknown topic {topic!r}")
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
    owners = {
        (str(lease.get("group")), _int(lease.get("partition"), -1)): lease
        for lease in data.get("leases") or []
        if isinstance(lease, Mapping)
    }
    consumers_by_group: dict[str, list[dict[str, Any]]] = {}
    for c in data.get("consumers") or []:
        if isinstance(c, Mapping):
            consumers_by_group.setdefault(str(c.get("group")), []).append(dict(c))
    since = now_ms() - DRAIN_WINDOW_MS
    group_names = [str(g.get("group", "")) for g in data.get("groups") or []]
    lag_series = (
        store.series_many(cluster, "lag", [f"{topic}/{g}" for g in group_names], since_ms=since)
        if group_names
        else {}
    )
    groups = []
    rows = []
    for g in data.get("groups") or []:
        name = str(g.get("group", ""))
        consumers = consumers_by_group.get(name, [])
        drain = charts.drain_estimate(
            lag_series.get(f"{topic}/{name}") or [], current=_num(g.get("lag"))
        )
        group_row = {
            "group": name,
            "lag": g.get("lag"),
            "lag_ms": g.get("lag_ms"),
            "pending": _int(g.get("pending")),
            "lag_exact": bool(g.get("lag_exact")),
            "status": _status(g.get("status")),
            "status_reason": str(g.get("status_reason") or ""),
            "consumers": len(consumers),
            "drain": asdict(drain),
            "partitions": [],
        }
        for p in g.get("partitions") or []:
            if not isinstance(p, Mapping):
                continue
            pnum = _int(p.get("partition"), -1)
            lease = owners.get((name, pnum)) or {}
            holders = [c["name"] for c in consumers if pnum in (c.get("partitions_held") or [])]
            exactness = str(p.get("exactness") or ("exact" if p.get("lag_exact") else "counted"))
            if p.get("lag") is None:
                exactness = "unknown"
            row = {
                **dict(p),
                "group": name,
                "partition": pnum,
                "exactness": exactness,
                "owner": lease.get("owner"),
                "ttl_ms": lease.get("ttl_ms"),
                "epoch": lease.get("epoch"),
                "holders": holders,
                "status": _status(p.get("status")),
                "status_reason": str(p.get("status_reason") or ""),
            }
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
        "taken_at_ms": _int((snap or {}).get("taken_at_ms")) or None,
        "age_ms": snapshot_age_ms(snap),
    }


def topic_charts_get(
    cluster: str, topic: str, *, groups: list[str], window: str = "1h"
) -> dict[str, dict[str, Any]]:
    """Plotly figures for the topic page over ``window`` (1h/6h/24h/7d)."""
    try:
        span = charts.window_ms(window)
    except ValueError as exc:
        raise ParamError(str(exc)) from None
    until = now_ms()
    since = until - span
    entities = [f"{topic}/{g}" for g in groups]
    lag = store.series_many(cluster, "lag", entities, since_ms=since) if entities else {}
    lag_ms = store.series_many(cluster, "lag_ms", entities, since_ms=since) if entities else {}
    consumed = (
        store.series_many(cluster, "consumed_total", entities, since_ms=since) if entities else {}
    )
    produced = store.series_get(cluster, "produced_total", topic, since_ms=since)
    dlq = store.series_get(cluster, "dlq_length", topic, since_ms=since)
    name = {f"{topic}/{g}": g for g in groups}
    rates: dict[str, list[charts.Point]] = {"produced": charts.rate_from_counter(produced)}
    for entity, pts in consumed.items():
        rates[f"consumed by {name.get(entity, entity)}"] = charts.rate_from_counter(pts)
    lag_s = {name.get(e, e): [(t, v / 1000.0) for t, v in pts] for e, pts in lag_ms.items()}
    window_args: dict[str, Any] = {"since_ms": since, "until_ms": until}
    return {
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
    }


def group_names(cluster: str, topic: str) -> list[str]:
    """Groups of ``topic`` from the snapshot, or live when the snapshot lacks the topic."""
    data = _find_topic(_snapshot(cluster), topic)
    if data is not None:
        return [str(g.get("group", "")) for g in data.get("groups") or []]
    try:
        return clusters.admin(cluster).groups(topic)
    except (UnknownTopicError, InvalidArgumentError):
        raise NotFoundError(f"unknown topic {topic!r}") from None


# --- live drill-downs ---------------------------------------------------------


def poison_threshold() -> int:
    """Deliveries at which a pending entry is highlighted as poison (max_retries + 1)."""
    return int(settings.CONSOLE_POISON_DELIVERIES)


def pending_get(
    cluster: str,
    topic: str,
    group: str,
    *,
    user: Any,
    sort: str = "idle",
    order: str = "desc",
    limit: int = PAGE_SIZE,
    offset: int = 0,
    consumer: str | None = None,
    partition: int | None = None,
    min_idle_ms: int | None = None,
    min_deliveries: int | None = None,
) -> PendingPage:
    """One page of the group-wide PEL, sorted and filtered by mqcore (bounded scan)."""
    _require_visible(user, cluster, topic)
    sort = parse_choice(sort, "sort", PENDING_SORTS, "idle")
    order = parse_choice(order, "order", ORDERS, "desc")
    if not 1 <= limit <= PENDING_MAX_LIMIT:
        raise ParamError(f"limit must be between 1 and {PENDING_MAX_LIMIT}")
    try:
        return clusters.admin(cluster).pending(
            topic,
            group,
            sort=sort,
            order=order,
            limit=limit,
            offset=offset,
            consumer=consumer or None,
            partition=partition,
            min_idle_ms=min_idle_ms or 0,
            min_deliveries=min_deliveries or 0,
        )
    except UnknownTopicError:
        raise NotFoundError(f"unknown topic {topic!r}") from None
    except UnknownGroupError:
        raise NotFoundError(f"unknown group {group!r} of topic {topic!r}") from None
    except UnknownPartitionError:
        raise ParamError(f"partition {partition} does not exist") from None
    except InvalidArgumentError as exc:
        raise ParamError(str(exc)) from None


def leases_get(cluster: str, topic: str, *, user: Any, group: str | None = None) -> dict[str, Any]:
    """Live leases and consumers of ``topic`` (optionally one group) plus the timeline."""
    _require_visible(user, cluster, topic)
    admin = clusters.admin(cluster)
    try:
        leases: list[LeaseInfo] = admin.leases(topic, group)
        consumers: list[ConsumerInfo] = admin.consumers(topic, group)
    except UnknownTopicError:
        raise NotFoundError(f"unknown topic {topic!r}") from None
    except UnknownGroupError:
        raise NotFoundError(f"unknown group {group!r} of topic {topic!r}") from None
    timeline = [
        e
        for e in store.lease_timeline_get(cluster, topic, limit=200)
        if group is None or e.get("group") == group
    ]
    return {
        "leases": leases,
        "consumers": consumers,
        "unowned": sum(1 for lease in leases if not lease.owner),
        "timeline": timeline,
    }


def message_get(
    cluster: str, topic: str, partition: int, entry_id: str, *, user: Any
) -> tuple[Message, bool]:
    """One partition entry, and whether the user may see its payload.

    When the user may not (sensitive topic, see ``permissions.payload_visible``),
    the payload, payload bytes and header values are replaced by a mask.
    """
    _require_visible(user, cluster, topic)
    try:
        message = clusters.admin(cluster).message(topic, partition, entry_id)
    except UnknownTopicError:
        raise NotFoundError(f"unknown topic {topic!r}") from None
    except UnknownPartitionError:
        raise NotFoundError(f"partition {partition} of {topic!r} does not exist") from None
    except UnknownMessageError:
        raise NotFoundError(f"no entry {entry_id} in {topic!r} partition {partition}") from None
    except InvalidArgumentError as exc:  # InvalidIdError included
        raise ParamError(str(exc)) from None
    allowed = payload_visible(user, cluster, topic)
    if not allowed:
        message = Message(
            topic=message.topic,
            partition=message.partition,
            id=message.id,
            payload=MASK,
            payload_bytes=None,
            key=message.key,
            headers=mask_headers(message.headers, visible=False),
            timestamp=message.timestamp,
            retry_count=message.retry_count,
            max_retries=message.max_retries,
            fields=mask_fields(message.fields, visible=False),
        )
    return message, allowed


def lag_get(cluster: str, topic: str, *, user: Any, group: str | None = None) -> list[Any]:
    """Live lag of ``topic`` (all groups, or one) from mqcore (bounded per partition)."""
    _require_visible(user, cluster, topic)
    try:
        return list(clusters.admin(cluster).lag(topic, group))
    except UnknownTopicError:
        raise NotFoundError(f"unknown topic {topic!r}") from None
    except UnknownGroupError:
        raise NotFoundError(f"unknown group {group!r} of topic {topic!r}") from None
    except InvalidArgumentError as exc:
        raise ParamError(str(exc)) from None
