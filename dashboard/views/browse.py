"""The topic message browser page, and "produce a test message" (Operator).

The browser is a GET form (every view bookmarkable): partition, order, start, filters;
the page shows what the bounded scan read and whether it stopped at its bound, and
"Next page" carries the cursor. A bad filter (an expression that does not parse, a
text search on a masked topic) re-renders the form with the error (400), never a 500.
Produce is a POST + CSRF form through :mod:`dashboard.services.produce` (permission,
the producer's validation, audit); it redirects to the new message's page.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, QueryDict
from django.shortcuts import redirect
from django.urls import URLPattern, path
from django.views.decorators.http import require_GET, require_POST

from dashboard.permissions import Action, actions_for, can_map
from dashboard.ratelimits import BROWSE_FILTERS, count_request, rate_limited
from dashboard.selectors.pages.browse import BROWSE_PARAMS, browse_get
from dashboard.selectors.pages.params import parse_int
from dashboard.services import produce as svc
from dashboard.services.audit import origin_from_request
from dashboard.views.errors import page_guard
from dashboard.views.htmx import HtmxHttpRequest, render_page

__all__ = ["urlpatterns"]

TEMPLATE = "dashboard/browse.html"
ROW_PAYLOAD_CHARS = 300


def _next_query(params: QueryDict, cursor: str | None) -> str:
    if not cursor:
        return ""
    query = params.copy()
    query["cursor"] = cursor
    return query.urlencode()


def _context(
    request: HtmxHttpRequest, cluster: str, topic: str, produce: dict[str, str] | None = None
) -> tuple[dict[str, Any], int]:
    form = {name: (request.GET.get(name) or "").strip() for name in BROWSE_PARAMS}
    context: dict[str, Any] = {
        "cluster": cluster,
        "topic": topic,
        "form": form,
        "produce": produce or {},
        "produce_open": request.GET.get("produce") == "1",
        "can": can_map(actions_for(request.user, cluster=cluster, topic=topic)),
        "payload_chars": ROW_PAYLOAD_CHARS,
        "filtered": any(form[k] for k in ("key", "header", "text", "where")),
    }
    status = 200
    try:
        page = browse_get(cluster, topic, request.GET, user=request.user)
    except ValueError as exc:  # bad filter or parameter: the form again, with the error
        context["error"] = str(exc)
        status = 400
    else:
        context["d"] = page
        context["next_query"] = _next_query(request.GET, page["next_cursor"])
        context["paged"] = bool(form["cursor"])
    return context, status


@login_required
@require_GET
@page_guard(Action.VIEW)
@rate_limited("browse", filters=BROWSE_FILTERS)
def browse_page(request: HtmxHttpRequest, cluster: str, topic: str) -> HttpResponse:
    context, status = _context(request, cluster, topic)
    return render_page(request, TEMPLATE, context, status=status)


@login_required
@require_POST
@page_guard(Action.VIEW)
def produce_message(request: HtmxHttpRequest, cluster: str, topic: str) -> HttpResponse:
    form = {name: request.POST.get(name, "") for name in ("payload", "key", "headers", "partition")}
    try:
        sent = svc.produce_message(
            acting_user=request.user,
            cluster=cluster,
            topic=topic,
            payload=form["payload"],
            key=form["key"].strip() or None,
            headers=svc.header_lines(form["headers"]),
            partition=parse_int(form["partition"].strip(), "partition", default=None),
            origin=origin_from_request(request),
        )
    except ValueError as exc:
        # the form again over the browser, which reads with the URL's filters: it counts
        count_request(request, "browse", BROWSE_FILTERS)
        context, _ = _context(request, cluster, topic, produce={**form, "error": str(exc)})
        return render_page(request, TEMPLATE, context, status=400)
    messages.success(request, f"Produced {sent['id']} to partition {sent['partition']}.")
    return redirect(
        "dashboard:message-detail",
        cluster=cluster,
        topic=topic,
        partition=sent["partition"],
        entry_id=sent["id"],
    )


BASE = "clusters/<str:cluster>/topics/<str:topic>/messages/"
urlpatterns: list[URLPattern] = [
    path(BASE, browse_page, name="topic-browse"),
    path(BASE + "produce/", produce_message, name="topic-produce"),
]
