"""Read pages: overview, topic, pending, leases, message detail.

Each page declares its live regions as template partials; an htmx poll gets only
``"<page>.html#<region>"``. Filters, sort and paging live in the query string so
every view is bookmarkable. Views read through :mod:`dashboard.selectors.pages` only.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect
from django.urls import path
from django.views.decorators.http import require_GET

from dashboard.body import FORM_TRUE
from dashboard.charts import WINDOWS
from dashboard.clusters import cluster_names
from dashboard.permissions import (
    Action,
    actions_for,
    can_map,
    cluster_visible,
    has_action,
)
from dashboard.selectors.pages.leases import leases_get
from dashboard.selectors.pages.messages import (
    PREVIEW_BYTES,
    message_get,
    message_trace_get,
    payload_preview,
)
from dashboard.selectors.pages.overview import overview_get
from dashboard.selectors.pages.params import PAGE_SIZE, NotFoundError, Paged, parse_int
from dashboard.selectors.pages.partitions import partitions_get
from dashboard.selectors.pages.pending import pending_get, poison_threshold
from dashboard.selectors.pages.snapshot import now_ms
from dashboard.selectors.pages.topic import group_list, topic_charts_get, topic_get
from dashboard.views.errors import page_guard
from dashboard.views.htmx import HtmxHttpRequest, render_page

HEX_PREVIEW_BYTES = 4096


def _flag(request: HtmxHttpRequest, name: str) -> bool:
    return request.GET.get(name, "") in FORM_TRUE


@login_required
@require_GET
def home(request: HtmxHttpRequest) -> HttpResponse:
    """``/``: the first cluster's overview (or the one picked in the frame's picker)."""
    names = [n for n in cluster_names() if cluster_visible(request.user, n)] or cluster_names()
    picked = request.GET.get("cluster", "")
    target = picked if picked in names else names[0]
    return redirect("dashboard:overview", cluster=target)


@login_required
@require_GET
@page_guard(Action.VIEW)
def overview(request: HtmxHttpRequest, cluster: str) -> HttpResponse:
    page = parse_int(request.GET.get("page"), "page", default=1, minimum=1) or 1
    data = overview_get(
        cluster,
        user=request.user,
        sort=request.GET.get("sort") or "status",
        order=request.GET.get("order") or "desc",
        only_problems=_flag(request, "problems"),
        q=request.GET.get("q", "").strip()[:200],
        page=page,
    )
    context = {"cluster": cluster, "ov": data, "now_ms": now_ms()}
    return render_page(request, "dashboard/overview.html", context, region="table")


@login_required
@require_GET
@page_guard(Action.VIEW)
def topic_detail(request: HtmxHttpRequest, cluster: str, topic: str) -> HttpResponse:
    window = request.GET.get("window") or "1h"
    data = topic_get(cluster, topic, user=request.user)
    groups = [g["group"] for g in data["groups"]]
    figures = topic_charts_get(cluster, topic, groups=groups, window=window)
    context = {
        "cluster": cluster,
        "topic": topic,
        "t": data,
        "window": window,
        "windows": list(WINDOWS),
        "figures": figures,
        # the partition panel is not polled (its hot-key sample would vanish): full page only
        "parts": None if request.htmx else partitions_get(cluster, topic, user=request.user),
        "now_ms": now_ms(),
        "can": can_map(actions_for(request.user, cluster=cluster, topic=topic)),
    }
    return render_page(request, "dashboard/topic.html", context, region="live")


@login_required
@require_GET
@page_guard(Action.VIEW)
def pending(request: HtmxHttpRequest, cluster: str, topic: str) -> HttpResponse:
    groups = group_list(cluster, topic)
    group = request.GET.get("group") or (groups[0] if groups else "")
    per_page = PAGE_SIZE
    page = parse_int(request.GET.get("page"), "page", default=1, minimum=1) or 1
    partition = parse_int(request.GET.get("partition"), "partition", default=None)
    min_idle_s = parse_int(request.GET.get("min_idle_s"), "min_idle_s", default=None)
    min_deliveries = parse_int(request.GET.get("min_deliveries"), "min_deliveries", default=None)
    sort = request.GET.get("sort") or "idle"
    order = request.GET.get("order") or "desc"
    consumer = request.GET.get("consumer", "").strip()
    result = None
    if group:
        if group not in groups:
            raise NotFoundError(f"unknown group {group!r} of topic {topic!r}")
        result = pending_get(
            cluster,
            topic,
            group,
            user=request.user,
            sort=sort,
            order=order,
            limit=per_page,
            offset=(page - 1) * per_page,
            consumer=consumer or None,
            partition=partition,
            min_idle_ms=None if min_idle_s is None else min_idle_s * 1000,
            min_deliveries=min_deliveries,
        )
    paged = Paged(result.entries if result else [], page, per_page, result.total if result else 0)
    context = {
        "cluster": cluster,
        "topic": topic,
        "groups": groups,
        "group": group,
        "result": result,
        "paged": paged,
        "sort": sort,
        "order": order,
        "filters": {
            "consumer": consumer,
            "partition": "" if partition is None else partition,
            "min_idle_s": "" if min_idle_s is None else min_idle_s,
            "min_deliveries": "" if min_deliveries is None else min_deliveries,
        },
        "poison_at": poison_threshold(),
        "can_act": has_action(request.user, Action.CLAIM, cluster=cluster, topic=topic),
        "now_ms": now_ms(),
    }
    return render_page(request, "dashboard/pending.html", context, region="table")


@login_required
@require_GET
@page_guard(Action.VIEW)
def leases(request: HtmxHttpRequest, cluster: str, topic: str) -> HttpResponse:
    groups = group_list(cluster, topic)
    group = request.GET.get("group") or None
    if group is not None and group not in groups:
        raise NotFoundError(f"unknown group {group!r} of topic {topic!r}")
    data = leases_get(cluster, topic, user=request.user, group=group)
    context = {
        "cluster": cluster,
        "topic": topic,
        "groups": groups,
        "group": group or "",
        "d": data,
        "now_ms": now_ms(),
    }
    return render_page(request, "dashboard/leases.html", context, region="live")


@login_required
@require_GET
@page_guard(Action.VIEW)
def message_detail(
    request: HtmxHttpRequest, cluster: str, topic: str, partition: int, entry_id: str
) -> HttpResponse:
    message, payload_allowed = message_get(cluster, topic, partition, entry_id, user=request.user)
    full = _flag(request, "full")
    preview = payload_preview(message, None if full else PREVIEW_BYTES)
    binary = message.payload_bytes
    hex_truncated = binary is not None and not full and len(binary) > HEX_PREVIEW_BYTES
    context = {
        "cluster": cluster,
        "topic": topic,
        "m": message,
        "payload": preview["text"],
        "payload_size": preview["size"],
        "truncated": preview["truncated"] and binary is None,
        "binary": binary[:HEX_PREVIEW_BYTES] if hex_truncated and binary else binary,
        "binary_len": len(binary) if binary is not None else 0,
        "hex_truncated": hex_truncated,
        "payload_allowed": payload_allowed,
        "undecoded": message.undecoded.as_dict() if message.undecoded else None,
        "group": request.GET.get("group", ""),
        "preview_limit": PREVIEW_BYTES,
        "trace": message_trace_get(cluster, topic, partition, entry_id, user=request.user),
    }
    return render_page(request, "dashboard/message.html", context)


urlpatterns = [
    path("", home, name="home"),
    path("clusters/<str:cluster>/", overview, name="overview"),
    path("clusters/<str:cluster>/topics/<str:topic>/", topic_detail, name="topic-detail"),
    path("clusters/<str:cluster>/topics/<str:topic>/pending/", pending, name="pending"),
    path("clusters/<str:cluster>/topics/<str:topic>/leases/", leases, name="leases"),
    path(
        "clusters/<str:cluster>/topics/<str:topic>/messages/<int:partition>/<str:entry_id>/",
        message_detail,
        name="message-detail",
    ),
]

__all__ = ["urlpatterns"]
