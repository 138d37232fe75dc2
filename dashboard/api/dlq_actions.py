"""JSON API of one dead letter and the DLQ-wide writes: twins of the DLQ page's actions.

- ``GET  /api/v1/clusters/<c>/topics/<t>/dlq/<id>`` the letter, its replay history and
  what happened after each replay (``followups``)
- ``POST .../dlq/<id>/delete`` body ``{"reason"}`` (Admin)
- ``POST .../dlq/purge`` body ``{"confirm": "<topic>", "reason"}`` (Admin)
- ``POST .../dlq/export`` body ``{"ids": ["<id>", ...]}`` the letters as JSON (Viewer)

Same services as the pages: permission, audit intent and outcome, validation.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import URLPattern, path, re_path

from dashboard.api.auth import api_view
from dashboard.body import Body
from dashboard.permissions import Action
from dashboard.ratelimits import rate_limited
from dashboard.selectors import dlq as sel
from dashboard.services import dlq as svc
from dashboard.services.audit import origin_from_request

__all__ = ["urlpatterns"]

LOOSE = {"default": str}  # letters carry mqcore values; as the page's export, text for the rest


@api_view("GET", action=Action.VIEW)
def dlq_letter(request: HttpRequest, cluster: str, topic: str, dlq_id: str) -> HttpResponse:
    data = sel.dlq_letter_get(user=request.user, cluster=cluster, topic=topic, dlq_id=dlq_id)
    return JsonResponse(
        {
            "cluster": cluster,
            "topic": topic,
            "letter": sel.letter_json(data["letter"]),
            "followups": data["followups"],
        },
        json_dumps_params=LOOSE,
    )


@api_view("POST")
def dlq_delete(request: HttpRequest, cluster: str, topic: str, dlq_id: str) -> HttpResponse:
    body = Body(request)
    deleted = svc.dlq_delete(
        acting_user=request.user,
        cluster=cluster,
        topic=topic,
        dlq_id=dlq_id,
        reason=body.text("reason"),
        origin=origin_from_request(request),
    )
    return JsonResponse({"id": dlq_id, "deleted": deleted})


@api_view("POST")
def dlq_purge(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    body = Body(request)
    removed = svc.dlq_purge(
        acting_user=request.user,
        cluster=cluster,
        topic=topic,
        confirm=body.text("confirm"),
        reason=body.text("reason"),
        origin=origin_from_request(request),
    )
    return JsonResponse({"topic": topic, "purged": removed})


@api_view("POST", action=Action.VIEW)
@rate_limited("export")
def dlq_export(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    ids = Body(request).texts("ids")
    if not ids:
        raise ValueError("ids: select at least one letter to export")
    letters = svc.dlq_export(
        acting_user=request.user,
        cluster=cluster,
        topic=topic,
        ids=ids,
        origin=origin_from_request(request),
    )
    return JsonResponse(
        {"cluster": cluster, "topic": topic, "letters": letters}, json_dumps_params=LOOSE
    )


T = "api/v1/clusters/<str:cluster>/topics/<str:topic>/dlq"
LETTER = r"^api/v1/clusters/(?P<cluster>[^/]+)/topics/(?P<topic>[^/]+)/dlq/"
LETTER += r"(?P<dlq_id>\d{1,20}-\d{1,20})"
urlpatterns: list[URLPattern] = [
    path(T + "/purge", dlq_purge, name="api-dlq-purge"),
    path(T + "/export", dlq_export, name="api-dlq-export"),
    re_path(LETTER + "$", dlq_letter, name="api-dlq-letter"),
    re_path(LETTER + "/delete$", dlq_delete, name="api-dlq-delete"),
]
