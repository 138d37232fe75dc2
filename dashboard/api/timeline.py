"""JSON twin of the incident timeline: ``/api/v1/clusters/<c>/timeline``.

Query: ``topic``, ``kind`` (repeated or comma-separated), ``group``, ``since`` and
``until`` (epoch ms or ISO time, UTC when no zone), ``limit`` (1..500, default 100)
and ``before`` (the ``next_before`` of the previous answer). Events come newest
first; ``next_before`` is null on the last page.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import path

from dashboard.api.auth import api_view
from dashboard.permissions import Action
from dashboard.selectors.pages.params import parse_int
from dashboard.selectors.pages.timeline import KINDS, parse_kinds, parse_time, timeline_get

__all__ = ["urlpatterns"]

DEFAULT_LIMIT = 100


@api_view("GET", action=Action.VIEW)
def timeline(request: HttpRequest, cluster: str) -> HttpResponse:
    topic = request.GET.get("topic", "").strip() or None
    kinds = parse_kinds(request.GET.getlist("kind"))
    group = request.GET.get("group", "").strip() or None
    limit = parse_int(
        request.GET.get("limit"), "limit", default=DEFAULT_LIMIT, minimum=1, maximum=500
    )
    data = timeline_get(
        cluster,
        user=request.user,
        topic=topic,
        kinds=kinds,
        group=group,
        since_ms=parse_time(request.GET.get("since"), "since"),
        until_ms=parse_time(request.GET.get("until"), "until"),
        limit=limit or DEFAULT_LIMIT,
        before=request.GET.get("before", "").strip() or None,
    )
    return JsonResponse(
        {
            "cluster": cluster,
            "topic": topic,
            "kinds": kinds or list(KINDS),
            "group": group,
            "events": data["events"],
            "next_before": data["next_before"],
        }
    )


urlpatterns = [
    path("api/v1/clusters/<str:cluster>/timeline", timeline, name="api-timeline"),
]
