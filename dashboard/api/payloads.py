"""API twins of the payload downloads: ``GET .../dlq/<id>/payload``,
``.../retries/<item>/payload`` and ``.../messages/<p>/<id>/payload``: the stored bytes
of one payload (``application/octet-stream``, an attachment, ``nosniff``), for callers
who may see the topic's payloads (403 for a masked viewer), bounded."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, path, re_path

from dashboard.api.auth import api_view
from dashboard.permissions import Action
from dashboard.ratelimits import rate_limited
from dashboard.selectors.payloads import download_response, raw_payload_get

__all__ = ["urlpatterns"]


def _download(
    request: HttpRequest, cluster: str, topic: str, kind: str, ref: str, partition: int = 0
) -> HttpResponse:
    payload = raw_payload_get(
        user=request.user, cluster=cluster, topic=topic, kind=kind, ref=ref, partition=partition
    )
    return download_response(payload)  # type: ignore[return-value]


@api_view("GET", action=Action.VIEW)
@rate_limited("export")
def letter_payload(request: HttpRequest, cluster: str, topic: str, dlq_id: str) -> HttpResponse:
    return _download(request, cluster, topic, "dlq", dlq_id)


@api_view("GET", action=Action.VIEW)
@rate_limited("export")
def retry_item_payload(
    request: HttpRequest, cluster: str, topic: str, item_id: str
) -> HttpResponse:
    return _download(request, cluster, topic, "retry", item_id)


@api_view("GET", action=Action.VIEW)
@rate_limited("export")
def message_payload(
    request: HttpRequest, cluster: str, topic: str, partition: int, entry_id: str
) -> HttpResponse:
    return _download(request, cluster, topic, "message", entry_id, partition)


T = "api/v1/clusters/<str:cluster>/topics/<str:topic>"
urlpatterns: list[URLPattern] = [
    re_path(
        r"^api/v1/clusters/(?P<cluster>[^/]+)/topics/(?P<topic>[^/]+)/dlq/"
        r"(?P<dlq_id>\d{1,20}-\d{1,20})/payload$",
        letter_payload,
        name="api-dlq-letter-payload",
    ),
    path(f"{T}/retries/<str:item_id>/payload", retry_item_payload, name="api-retry-item-payload"),
    path(
        f"{T}/messages/<int:partition>/<str:entry_id>/payload",
        message_payload,
        name="api-message-payload",
    ),
]
