"""The incident timeline pages: a cluster's (with a topic filter) and a topic's tab.

Filters live in the query string (kind checkboxes, group, since/until, topic);
the filter form updates the list region through htmx and works as a plain GET.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.urls import path
from django.views.decorators.http import require_GET

from dashboard.permissions import Action
from dashboard.selectors.pages.params import parse_int
from dashboard.selectors.pages.snapshot import now_ms
from dashboard.selectors.pages.timeline import KINDS, parse_kinds, parse_time, timeline_get
from dashboard.views.errors import page_guard
from dashboard.views.htmx import HtmxHttpRequest
from dashboard.views.pages import render_page

__all__ = ["urlpatterns"]

PAGE_LIMIT = 100


@login_required
@require_GET
@page_guard(Action.VIEW)
def timeline(request: HtmxHttpRequest, cluster: str, topic: str | None = None) -> HttpResponse:
    picked_topic = topic or request.GET.get("topic", "").strip() or None
    kinds = parse_kinds(request.GET.getlist("kind"))
    group = request.GET.get("group", "").strip()
    since_raw = request.GET.get("since", "")
    until_raw = request.GET.get("until", "")
    limit = parse_int(request.GET.get("limit"), "limit", default=PAGE_LIMIT, minimum=1, maximum=500)
    data = timeline_get(
        cluster,
        user=request.user,
        topic=picked_topic,
        kinds=kinds,
        group=group or None,
        since_ms=parse_time(since_raw, "since"),
        until_ms=parse_time(until_raw, "until"),
        limit=limit or PAGE_LIMIT,
        before=request.GET.get("before", "").strip() or None,
    )
    context = {
        "cluster": cluster,
        "topic": topic,
        "picked_topic": picked_topic or "",
        "kinds": KINDS,
        "chosen": kinds,
        "group": group,
        "since": since_raw,
        "until": until_raw,
        "d": data,
        "now_ms": now_ms(),
    }
    return render_page(request, "dashboard/timeline.html", context, region="list")


urlpatterns = [
    path("clusters/<str:cluster>/timeline/", timeline, name="timeline"),
    path("clusters/<str:cluster>/topics/<str:topic>/timeline/", timeline, name="topic-timeline"),
]
