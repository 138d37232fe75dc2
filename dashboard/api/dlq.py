"""JSON API of the dead-letter list: the twin of the page, same permissions.

- ``GET  /api/v1/clusters/<c>/topics/<t>/dlq`` letters newest first (``before`` cursor,
  ``limit``, filters ``text``, ``partition``, ``key``, ``since``, ``until``)
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import URLPattern, path

from dashboard.api.auth import ApiParamError, api_view
from dashboard.permissions import Action
from dashboard.ratelimits import DLQ_FILTERS, rate_limited
from dashboard.selectors import dlq as sel

MAX_LIMIT = 200


def _limit(request: HttpRequest, default: int = 50) -> int:
    raw = request.GET.get("limit", "")
    if not raw:
        return default
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_LIMIT:
        raise ApiParamError(f"limit: 1..{MAX_LIMIT}")
    return int(raw)


@api_view("GET", action=Action.VIEW)
@rate_limited("browse", filters=DLQ_FILTERS)
def dlq_list(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    page = sel.dlq_page_get(
        user=request.user,
        cluster=cluster,
        topic=topic,
        filters=sel.DlqFilters.from_query(request.GET),
        before=request.GET.get("before") or None,
        limit=_limit(request),
    )
    return JsonResponse(
        {
            "cluster": cluster,
            "topic": topic,
            "depth": page.depth,
            "letters": [sel.letter_json(v) for v in page.letters],
            "next_cursor": page.next_cursor,
            "scanned": page.scanned,
            "complete": page.complete,
            "masked": page.masked,
        }
    )


urlpatterns: list[URLPattern] = [
    path("api/v1/clusters/<str:cluster>/topics/<str:topic>/dlq", dlq_list, name="api-dlq"),
]
