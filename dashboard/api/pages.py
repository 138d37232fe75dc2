"""JSON twins of the read pages under ``/api/v1/`` (session or Bearer token).

Field names follow the mqcore CLI ``--json`` contract where they overlap
(``topic list``, ``lag``, ``pending``, ``leases``). Lists are paged with
``limit``/``offset`` (or ``page`` for the overview); unknown cluster, topic, group
or message -> 404 JSON; bad parameters -> 400 JSON; unreachable cluster -> 503 JSON.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import path

from dashboard.api.auth import api_view
from dashboard.body import FORM_TRUE
from dashboard.charts import window_ms
from dashboard.clusters import cluster_names, console_store
from dashboard.collectors.series import (
    GROUP_METRICS,
    MEMORY_METRIC,
    PARTITION_METRIC,
    TOPIC_METRICS,
)
from dashboard.permissions import Action, cluster_visible, topic_visible
from dashboard.selectors.pages.leases import leases_get
from dashboard.selectors.pages.messages import (
    MAX_PREVIEW_BYTES,
    PREVIEW_BYTES,
    message_get,
    message_trace_get,
    payload_preview,
)
from dashboard.selectors.pages.overview import overview_get, topic_list
from dashboard.selectors.pages.params import (
    ORDERS,
    PAGE_SIZE,
    NotFoundError,
    ParamError,
    parse_choice,
    parse_int,
)
from dashboard.selectors.pages.pending import PENDING_SORTS, pending_get
from dashboard.selectors.pages.snapshot import now_ms
from dashboard.selectors.pages.topic import (
    fill_last_ids,
    group_list,
    lag_get,
    partition_lag_series,
    topic_get,
)

__all__ = ["urlpatterns"]

DEFAULT_LIMIT = 50
MAX_LIMIT = 500
# every series the collectors write, topic metrics first
SERIES_METRICS = tuple(
    dict.fromkeys((*TOPIC_METRICS, *GROUP_METRICS, PARTITION_METRIC, MEMORY_METRIC))
)
PARTITION_SERIES_MAX = 256  # partition_lag: the most lagging partitions, at most this many


def _limit_offset(request: HttpRequest) -> tuple[int, int]:
    limit = parse_int(
        request.GET.get("limit"), "limit", default=DEFAULT_LIMIT, minimum=1, maximum=MAX_LIMIT
    )
    offset = parse_int(request.GET.get("offset"), "offset", default=0, minimum=0)
    return limit or DEFAULT_LIMIT, offset or 0


def _flag(request: HttpRequest, name: str) -> bool:
    return request.GET.get(name, "") in FORM_TRUE


def _jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _jsonable(dataclasses.asdict(value))
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, bytes):
        return value.hex()
    return value


@api_view("GET", action=Action.VIEW)
def clusters(request: HttpRequest) -> HttpResponse:
    return JsonResponse(
        {"clusters": [n for n in cluster_names() if cluster_visible(request.user, n)]}
    )


@api_view("GET", action=Action.VIEW)
def overview(request: HttpRequest, cluster: str) -> HttpResponse:
    """The overview page's rows (worst first by default), one page at a time."""
    page = parse_int(request.GET.get("page"), "page", default=1, minimum=1) or 1
    per_page = (
        parse_int(
            request.GET.get("per_page"),
            "per_page",
            default=PAGE_SIZE,
            minimum=1,
            maximum=MAX_LIMIT,
        )
        or PAGE_SIZE
    )
    data = overview_get(
        cluster,
        user=request.user,
        sort=request.GET.get("sort") or "status",
        order=request.GET.get("order") or "desc",
        only_problems=_flag(request, "problems"),
        q=request.GET.get("q", "").strip()[:200],
        page=page,
        per_page=per_page,
        sparklines=False,
    )
    return JsonResponse(
        {
            "cluster": cluster,
            "snapshot": data.snapshot_found,
            "taken_at_ms": data.taken_at_ms,
            "age_ms": data.age_ms,
            "counts": data.counts,
            "topics_total": data.topics_total,
            "total": data.rows.total,
            "page": data.rows.page,
            "pages": data.rows.pages,
            "per_page": data.rows.per_page,
            "topics": [_row_out(r) for r in data.rows.items],
        }
    )


def _row_out(row: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k not in ("sparkline", "group_names")}


@api_view("GET", action=Action.VIEW)
def topics(request: HttpRequest, cluster: str) -> HttpResponse:
    """Topics of the latest snapshot by name (``topic list`` fields plus status and lag)."""
    limit, offset = _limit_offset(request)
    rows, snap = topic_list(cluster, user=request.user)
    return JsonResponse(
        {
            "cluster": cluster,
            "snapshot": snap is not None,
            "taken_at_ms": snap.taken_at_ms if snap is not None else None,
            "total": len(rows),
            "limit": limit,
            "offset": offset,
            "topics": [_row_out(r) for r in rows[offset : offset + limit]],
        }
    )


@api_view("GET", action=Action.VIEW)
def topic_detail(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    data = fill_last_ids(cluster, topic_get(cluster, topic, user=request.user))
    row: Mapping[str, Any] = data.get("row") or {}
    out = {
        "cluster": cluster,
        "topic": topic,
        "collected": data["collected"],
        "taken_at_ms": data.get("taken_at_ms"),
        **{k: v for k, v in _row_out(row).items() if k != "topic"},
        "retry": data.get("retry") or {},
        "error": data.get("error"),
        "groups": [
            {
                **{k: v for k, v in g.items() if k != "partitions"},
                "partitions": [
                    {k: v for k, v in p.items() if k != "group"} for p in g["partitions"]
                ],
            }
            for g in data["groups"]
        ],
        "consumers": data.get("consumers") or [],
        "leases": data.get("leases") or [],
    }
    return JsonResponse(_jsonable(out))


@api_view("GET", action=Action.VIEW)
def topic_series(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    """Time series behind the topic charts: ``?metric=lag&window=1h[&group=G]``.

    ``metric=partition_lag`` answers per partition (1-minute samples), the most
    lagging first, at most :data:`PARTITION_SERIES_MAX` of them (``left_out``: the rest).
    """
    metric = parse_choice(request.GET.get("metric"), "metric", SERIES_METRICS, "lag")
    window = request.GET.get("window") or "1h"
    try:
        span = window_ms(window)
    except ValueError as exc:
        raise ParamError(str(exc)) from None
    groups = group_list(cluster, topic)
    if not topic_visible(request.user, cluster, topic):
        raise NotFoundError(f"unknown topic {topic!r}")
    group = request.GET.get("group") or None
    if group is not None and group not in groups:
        raise NotFoundError(f"unknown group {group!r} of topic {topic!r}")
    since = now_ms() - span
    if metric == PARTITION_METRIC:
        traces, more = partition_lag_series(
            cluster,
            topic,
            groups=[group] if group else groups,
            since_ms=since,
            limit=PARTITION_SERIES_MAX,
        )
        return JsonResponse(
            {
                "cluster": cluster,
                "topic": topic,
                "metric": metric,
                "window": window,
                "since_ms": since,
                "partitions": [
                    {"group": g, "partition": p, "points": [[t, v] for t, v in pts]}
                    for g, p, pts in traces
                ],
                "left_out": more,
            }
        )
    per_group = metric in GROUP_METRICS
    if per_group:
        names = [group] if group else groups
        series = console_store().series_many(
            cluster, metric, [f"{topic}/{g}" for g in names], since_ms=since
        )
        points = {e.split("/", 1)[1] if "/" in e else e: pts for e, pts in series.items()}
    else:
        points = {topic: console_store().series_get(cluster, metric, topic, since_ms=since)}
    return JsonResponse(
        {
            "cluster": cluster,
            "topic": topic,
            "metric": metric,
            "window": window,
            "since_ms": since,
            "series": {k: [[t, v] for t, v in pts] for k, pts in points.items()},
        }
    )


@api_view("GET", action=Action.VIEW)
def lag(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    """Live lag (``mqcore lag --json`` shape), optionally one group."""
    group = request.GET.get("group") or None
    groups = lag_get(cluster, topic, user=request.user, group=group)
    return JsonResponse({"topic": topic, "groups": _jsonable(groups)})


@api_view("GET", action=Action.VIEW)
def pending(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    """One page of a group's PEL (``mqcore pending --json`` shape plus paging and totals)."""
    group = request.GET.get("group", "")
    if not group:
        raise ParamError("group is required")
    limit, offset = _limit_offset(request)
    partition = parse_int(request.GET.get("partition"), "partition", default=None)
    min_idle_ms = parse_int(request.GET.get("min_idle_ms"), "min_idle_ms", default=None)
    min_idle_s = parse_int(request.GET.get("min_idle_s"), "min_idle_s", default=None)
    if min_idle_ms is None and min_idle_s is not None:
        min_idle_ms = min_idle_s * 1000  # the page's unit, so its JSON link works
    min_deliveries = parse_int(request.GET.get("min_deliveries"), "min_deliveries", default=None)
    sort = parse_choice(request.GET.get("sort"), "sort", PENDING_SORTS, "idle")
    order = parse_choice(request.GET.get("order"), "order", ORDERS, "desc")
    result = pending_get(
        cluster,
        topic,
        group,
        user=request.user,
        sort=sort,
        order=order,
        limit=limit,
        offset=offset,
        consumer=request.GET.get("consumer") or None,
        partition=partition,
        min_idle_ms=min_idle_ms,
        min_deliveries=min_deliveries,
    )
    return JsonResponse(
        {
            "topic": topic,
            "group": group,
            "sort": sort,
            "order": order,
            "limit": limit,
            "offset": offset,
            **_jsonable(result),
        }
    )


@api_view("GET", action=Action.VIEW)
def leases(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    group = request.GET.get("group") or None
    if group is not None and group not in group_list(cluster, topic):
        raise NotFoundError(f"unknown group {group!r} of topic {topic!r}")
    data = leases_get(cluster, topic, user=request.user, group=group)
    return JsonResponse({"topic": topic, "group": group, **_jsonable(data)})


@api_view("GET", action=Action.VIEW)
def message(
    request: HttpRequest, cluster: str, topic: str, partition: int, entry_id: str
) -> HttpResponse:
    """One entry; binary payloads as ``payload_bytes`` in hex; masked for roles without access.

    The payload is cut to ``max_bytes`` (default 64 KiB, at most 4 MiB): ``payload_size``
    is its full size in bytes and ``payload_truncated`` says whether it was cut. ``trace``:
    its delivery state per group, retries and dead letter (bounded lookups)."""
    max_bytes = parse_int(
        request.GET.get("max_bytes"),
        "max_bytes",
        default=PREVIEW_BYTES,
        minimum=1,
        maximum=MAX_PREVIEW_BYTES,
    )
    msg, allowed = message_get(cluster, topic, partition, entry_id, user=request.user)
    preview = payload_preview(msg, max_bytes)
    msg = dataclasses.replace(msg, payload=preview["text"], payload_bytes=preview["binary"])
    out = _jsonable(msg)
    out.update(
        payload_masked=not allowed,
        payload_size=preview["size"],
        payload_truncated=preview["truncated"],
        trace=message_trace_get(cluster, topic, partition, entry_id, user=request.user),
    )
    return JsonResponse(out)


PREFIX = "api/v1/clusters/<str:cluster>"
TOPIC = f"{PREFIX}/topics/<str:topic>"

urlpatterns = [
    path("api/v1/clusters", clusters, name="api-clusters"),
    path(f"{PREFIX}/overview", overview, name="api-overview"),
    path(f"{PREFIX}/topics", topics, name="api-topics"),
    path(TOPIC, topic_detail, name="api-topic-detail"),
    path(f"{TOPIC}/series", topic_series, name="api-topic-series"),
    path(f"{TOPIC}/lag", lag, name="api-lag"),
    path(f"{TOPIC}/pending", pending, name="api-pending"),
    path(f"{TOPIC}/leases", leases, name="api-leases"),
    path(
        f"{TOPIC}/messages/<int:partition>/<str:entry_id>",
        message,
        name="api-message",
    ),
]
