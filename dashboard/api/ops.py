"""JSON twins of the pending actions, the collectors page and the audit chain check.

- ``POST /api/v1/clusters/<c>/topics/<t>/pending/claim`` body ``{"group", "partition",
  "ids": [...], "consumer", "reason"}`` (Operator; a reason when more than one entry)
- ``POST .../pending/move-to-dlq`` body ``{"group", "partition", "ids": [...], "reason"}``
  (Operator)
- ``GET  /api/v1/collectors`` the collector's last pass per visible cluster
- ``GET  /api/v1/audit/verify`` the audit chain check (cached like the page's)
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import URLPattern, path

from dashboard.api.auth import ApiParamError, api_view
from dashboard.body import Body
from dashboard.permissions import Action
from dashboard.selectors.collectors import collector_rows
from dashboard.services import pending as pending_svc
from dashboard.services.audit import audit_verify_cached, origin_from_request

__all__ = ["urlpatterns"]


def _target(body: Body) -> tuple[str, int, list[str]]:
    partition = body.number("partition")
    if partition is None or partition < 0:
        raise ApiParamError("partition: a number >= 0")
    return body.text("group").strip(), partition, body.texts("ids")


@api_view("POST", action=Action.CLAIM)
def pending_claim(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    body = Body(request)
    group, partition, ids = _target(body)
    claimed = pending_svc.pending_claim(
        acting_user=request.user,
        cluster=cluster,
        topic=topic,
        group=group,
        partition=partition,
        ids=ids,
        consumer=body.text("consumer"),
        reason=body.text("reason"),
        origin=origin_from_request(request),
    )
    return JsonResponse({"group": group, "partition": partition, "claimed": claimed})


@api_view("POST", action=Action.MOVE_TO_DLQ)
def pending_move_to_dlq(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    body = Body(request)
    group, partition, ids = _target(body)
    moved = pending_svc.pending_move_to_dlq(
        acting_user=request.user,
        cluster=cluster,
        topic=topic,
        group=group,
        partition=partition,
        ids=ids,
        reason=body.text("reason"),
        origin=origin_from_request(request),
    )
    return JsonResponse({"group": group, "partition": partition, "moved": moved})


@api_view("GET", action=Action.VIEW)
def collectors(request: HttpRequest) -> HttpResponse:
    return JsonResponse(
        {"collectors": collector_rows(request.user), "interval_s": settings.COLLECT_INTERVAL_S}
    )


@api_view("GET", action=Action.VIEW)
def audit_verify(request: HttpRequest) -> HttpResponse:
    report, checked_at = audit_verify_cached()
    return JsonResponse(
        {
            "intact": report.intact,
            "checked": report.checked,
            "first_broken_id": report.first_broken_id,
            "problem": report.problem,
            "unsigned": report.unsigned,
            "summary": str(report),
            "checked_at": checked_at,
        }
    )


T = "api/v1/clusters/<str:cluster>/topics/<str:topic>"
urlpatterns: list[URLPattern] = [
    path(T + "/pending/claim", pending_claim, name="api-pending-claim"),
    path(T + "/pending/move-to-dlq", pending_move_to_dlq, name="api-pending-move-to-dlq"),
    path("api/v1/collectors", collectors, name="api-collectors"),
    path("api/v1/audit/verify", audit_verify, name="api-audit-verify"),
]
