"""The retry browser: the topics with retry backlogs, and one topic's retry set.

``/clusters/<c>/retries/`` lists the visible topics of the latest snapshot with their
retry counts. ``/clusters/<c>/topics/<t>/retries/`` pages the topic's items live by
due time (state due/scheduled, key, text, partition; a cursor "next" link and a
"first page" link; htmx swaps the list region). Retry now and delete are POST + CSRF
forms over the checked rows, one row's button, or all items matching the filter;
writes go through :mod:`dashboard.services.retries` (Operator, reason, audit), and
redirect back to the list with the same filter.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import URLPattern, path, reverse
from django.views.decorators.http import require_GET, require_POST

from dashboard.permissions import Action, actions_for, can_map
from dashboard.ratelimits import RETRY_FILTERS, rate_limited
from dashboard.selectors.retries import retries_overview_get, retries_page_get
from dashboard.services import retries as svc
from dashboard.services.audit import origin_from_request
from dashboard.views.errors import page_guard
from dashboard.views.htmx import HtmxHttpRequest, render_page

__all__ = ["urlpatterns"]

FILTERS = ("state", "order", "key", "text", "partition")


@login_required
@require_GET
@page_guard(Action.VIEW)
def retries_index(request: HtmxHttpRequest, cluster: str) -> HttpResponse:
    data = retries_overview_get(user=request.user, cluster=cluster)
    return render_page(request, "dashboard/retries_index.html", {"cluster": cluster, "d": data})


@login_required
@require_GET
@page_guard(Action.VIEW)
@rate_limited("browse", filters=RETRY_FILTERS)
def topic_retries(request: HtmxHttpRequest, cluster: str, topic: str) -> HttpResponse:
    data = retries_page_get(user=request.user, cluster=cluster, topic=topic, query=request.GET)
    context = {
        "cluster": cluster,
        "topic": topic,
        "d": data,
        "f": data["filters"],
        "first_page": bool(request.GET.get("cursor") or request.GET.get("offset")),
        "query": urlencode(data["filters"]),
        "can": can_map(actions_for(request.user, cluster=cluster, topic=topic)),
    }
    return render_page(request, "dashboard/retries.html", context, region="list")


def _act(request: HttpRequest, cluster: str, topic: str, action: str) -> HttpResponse:
    post = request.POST
    one = post.get("one", "").strip()
    every = post.get("all_matching") in ("1", "on", "true")
    result = svc.retries_act(
        acting_user=request.user,
        cluster=cluster,
        topic=topic,
        action=action,
        ids=[one] if one else post.getlist("id"),
        all_matching=every and not one,
        filters={k: post.get(k, "") for k in FILTERS},
        reason=post.get("reason", ""),
        confirm=post.get("confirm", ""),
        origin=origin_from_request(request),
    )
    done = result["deleted"] if action == "delete" else result["retried"]
    verb = "Deleted" if action == "delete" else "Retried"
    text = f"{verb} {done} retry item{'s' if done != 1 else ''}"
    if result["missing"]:
        text += f"; {result['missing']} already gone"
    if result["skipped"]:
        text += f"; {result['skipped']} left in place (another topic's slot or unreadable)"
    if result["more"]:
        text += "; more items match: run it again"
    messages.success(request, text + ".")
    url = reverse("dashboard:topic-retries", kwargs={"cluster": cluster, "topic": topic})
    kept = {k: post.get(k, "").strip() for k in FILTERS if post.get(k, "").strip()}
    return redirect(f"{url}?{urlencode(kept)}" if kept else url)


@require_POST
@login_required
@page_guard()
def topic_retries_retry(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    return _act(request, cluster, topic, "retry")


@require_POST
@login_required
@page_guard()
def topic_retries_delete(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    return _act(request, cluster, topic, "delete")


BASE = "clusters/<str:cluster>/topics/<str:topic>/retries/"
urlpatterns: list[URLPattern] = [
    path("clusters/<str:cluster>/retries/", retries_index, name="retries"),
    path(BASE, topic_retries, name="topic-retries"),
    path(BASE + "retry/", topic_retries_retry, name="topic-retries-retry"),
    path(BASE + "delete/", topic_retries_delete, name="topic-retries-delete"),
]
