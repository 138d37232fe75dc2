"""The hot-key sample of one partition: an htmx partial of the topic page's partition
panel (also a plain page without htmx), read on demand, bounded."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.urls import URLPattern, path
from django.views.decorators.http import require_GET

from dashboard.permissions import Action
from dashboard.selectors.pages.partitions import hot_keys_get
from dashboard.views.errors import page_guard
from dashboard.views.htmx import HtmxHttpRequest
from dashboard.views.pages import render_page

__all__ = ["urlpatterns"]


@login_required
@require_GET
@page_guard(Action.VIEW)
def hot_keys(request: HtmxHttpRequest, cluster: str, topic: str, partition: int) -> HttpResponse:
    sample = hot_keys_get(
        cluster, topic, partition, user=request.user, count=request.GET.get("count")
    )
    context = {"cluster": cluster, "topic": topic, "sample": sample}
    return render_page(request, "dashboard/hot_keys.html", context, region="sample")


urlpatterns: list[URLPattern] = [
    path(
        "clusters/<str:cluster>/topics/<str:topic>/partitions/<int:partition>/hot-keys/",
        hot_keys,
        name="hot-keys",
    ),
]
