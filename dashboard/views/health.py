"""Liveness and readiness probes (no login: load balancers and orchestrators call them)."""

from django.http import HttpRequest, JsonResponse
from django.urls import path
from django.views.decorators.http import require_GET

from dashboard.selectors.health import ready_now


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    """200 when the database, the console store and every MQ deployment answer, else 503.

    The answer says only ready or not (no login here: what failed goes to the log),
    and is cached for a few seconds so probes cannot make it ping every cluster.
    """
    ok = ready_now()
    return JsonResponse({"status": "ok" if ok else "unavailable"}, status=200 if ok else 503)


urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("readyz", readyz, name="readyz"),
]
