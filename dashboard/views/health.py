"""Liveness and readiness probes (no login: load balancers and orchestrators call them)."""

from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.urls import path
from django.views.decorators.http import require_GET

from dashboard.clusters import cluster_client, cluster_names, console_redis


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    """200 when the database, the console store and every MQ deployment answer."""
    checks: dict[str, str] = {}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        checks["database"] = "ok"
    except Exception as exc:
        checks["database"] = f"error: {type(exc).__name__}"
    try:
        console_redis().ping()
        checks["console_redis"] = "ok"
    except Exception as exc:
        checks["console_redis"] = f"error: {type(exc).__name__}"
    for name in cluster_names():
        try:
            cluster_client(name).ping()
            checks[f"cluster:{name}"] = "ok"
        except Exception as exc:
            checks[f"cluster:{name}"] = f"error: {type(exc).__name__}"
    ok = all(v == "ok" for v in checks.values())
    return JsonResponse(
        {"status": "ok" if ok else "unavailable", "checks": checks}, status=200 if ok else 503
    )


urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("readyz", readyz, name="readyz"),
]
