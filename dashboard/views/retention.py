"""A topic's retention tab: floors, each rule's next delete, a what-if, and "trim now".

The view is a live, bounded read (:mod:`dashboard.selectors.retention`); typing rules
in the form shows what they would do (htmx swaps the view region, a plain GET works
too). Trimming is a POST through :mod:`dashboard.services.retention` (purge
permission, reason, the topic name typed, audited).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.urls import URLPattern, path
from django.views.decorators.http import require_GET, require_POST

from dashboard.permissions import Action, actions_for, can_map
from dashboard.selectors.pages.params import parse_int
from dashboard.selectors.retention import policy_from_form, retention_get
from dashboard.services import retention as svc
from dashboard.services.audit import origin_from_request
from dashboard.views.errors import page_guard
from dashboard.views.htmx import HtmxHttpRequest, render_page

__all__ = ["urlpatterns"]

TEMPLATE = "dashboard/retention.html"


def _form(data: Any) -> dict[str, Any]:
    return {
        "maxlen": (data.get("maxlen") or "").strip(),
        "max_age": (data.get("max_age") or "").strip(),
        "consumed": data.get("consumed") in ("1", "on", "true"),
        "ignore_groups": (data.get("ignore_groups") or "").strip(),
    }


def _context(request: HtmxHttpRequest, cluster: str, topic: str, form: dict[str, Any]) -> Any:
    page = parse_int(request.GET.get("page"), "page", default=1, minimum=1, maximum=100_000) or 1
    data = retention_get(
        user=request.user, cluster=cluster, topic=topic, policy=policy_from_form(form), page=page
    )
    can = can_map(actions_for(request.user, cluster=cluster, topic=topic))
    return {"cluster": cluster, "topic": topic, "form": form, "d": data, "can": can}


@login_required
@require_GET
@page_guard(Action.VIEW)
def retention_page(request: HtmxHttpRequest, cluster: str, topic: str) -> HttpResponse:
    context = _context(request, cluster, topic, _form(request.GET))
    return render_page(request, TEMPLATE, context, region="view")


@login_required
@require_POST
@page_guard(Action.VIEW)
def retention_trim(request: HtmxHttpRequest, cluster: str, topic: str) -> HttpResponse:
    form = _form(request.POST)
    result = svc.trim_topic(
        acting_user=request.user,
        cluster=cluster,
        topic=topic,
        policy=policy_from_form(form),
        reason=request.POST.get("reason", ""),
        confirm=request.POST.get("confirm", ""),
        origin=origin_from_request(request),
    )
    context = {**_context(request, cluster, topic, form), "result": result}
    return render_page(request, TEMPLATE, context)


BASE = "clusters/<str:cluster>/topics/<str:topic>/retention/"
urlpatterns: list[URLPattern] = [
    path(BASE, retention_page, name="topic-retention"),
    path(BASE + "trim/", retention_trim, name="topic-retention-trim"),
]
