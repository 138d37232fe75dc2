"""The raw-bytes download of one payload (a value too large to show, or past a page's
decode budget): ``.../dlq/<id>/payload/``, ``.../retries/<item>/payload/`` and
``.../messages/<p>/<id>/payload/``. Who may see the payload may download it
(:mod:`dashboard.selectors.payloads`); the bytes come as an ``application/octet-stream``
attachment with ``nosniff``."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.urls import URLPattern, path, re_path
from django.views.decorators.http import require_GET

from dashboard.permissions import Action
from dashboard.ratelimits import rate_limited
from dashboard.selectors.payloads import download_response, raw_payload_get
from dashboard.views.errors import page_guard

__all__ = ["urlpatterns"]

BASE = r"^clusters/(?P<cluster>[^/]+)/topics/(?P<topic>[^/]+)/"


def _download(
    request: HttpRequest, cluster: str, topic: str, kind: str, ref: str, partition: int = 0
) -> StreamingHttpResponse:
    payload = raw_payload_get(
        user=request.user, cluster=cluster, topic=topic, kind=kind, ref=ref, partition=partition
    )
    return download_response(payload)


@login_required
@require_GET
@page_guard(Action.VIEW)
@rate_limited("export")
def letter_payload(
    request: HttpRequest, cluster: str, topic: str, dlq_id: str
) -> StreamingHttpResponse | HttpResponse:
    return _download(request, cluster, topic, "dlq", dlq_id)


@login_required
@require_GET
@page_guard(Action.VIEW)
@rate_limited("export")
def retry_item_payload(
    request: HttpRequest, cluster: str, topic: str, item_id: str
) -> StreamingHttpResponse | HttpResponse:
    return _download(request, cluster, topic, "retry", item_id)


@login_required
@require_GET
@page_guard(Action.VIEW)
@rate_limited("export")
def message_payload(
    request: HttpRequest, cluster: str, topic: str, partition: int, entry_id: str
) -> StreamingHttpResponse | HttpResponse:
    return _download(request, cluster, topic, "message", entry_id, partition)


urlpatterns: list[URLPattern] = [
    re_path(
        BASE + r"dlq/(?P<dlq_id>\d{1,20}-\d{1,20})/payload/$",
        letter_payload,
        name="dlq-letter-payload",
    ),
    path(
        "clusters/<str:cluster>/topics/<str:topic>/retries/<str:item_id>/payload/",
        retry_item_payload,
        name="retry-item-payload",
    ),
    path(
        "clusters/<str:cluster>/topics/<str:topic>/messages/<int:partition>/<str:entry_id>/payload/",
        message_payload,
        name="message-payload",
    ),
]
