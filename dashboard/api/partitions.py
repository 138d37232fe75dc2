"""JSON twins of the topic page's partition panel: per-partition rate, length, memory and
their skew (``GET .../partitions``), and one partition's hot-key sample
(``GET .../partitions/<p>/hot-keys?count=N``)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import URLPattern, path

from dashboard.api.auth import api_view
from dashboard.permissions import Action
from dashboard.selectors.pages.partitions import hot_keys_get, partitions_get

__all__ = ["urlpatterns"]


@api_view("GET", action=Action.VIEW)
def partitions(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    data = partitions_get(
        cluster, topic, user=request.user, window=request.GET.get("window") or "5m"
    )
    return JsonResponse({"cluster": cluster, **data})


@api_view("GET", action=Action.VIEW)
def hot_keys(request: HttpRequest, cluster: str, topic: str, partition: int) -> HttpResponse:
    sample = hot_keys_get(
        cluster, topic, partition, user=request.user, count=request.GET.get("count")
    )
    return JsonResponse({"cluster": cluster, **sample})


T = "api/v1/clusters/<str:cluster>/topics/<str:topic>/partitions"
urlpatterns: list[URLPattern] = [
    path(T, partitions, name="api-topic-partitions"),
    path(f"{T}/<int:partition>/hot-keys", hot_keys, name="api-hot-keys"),
]
