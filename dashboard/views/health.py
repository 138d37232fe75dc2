"""Liveness and readiness probes (no login: load balancers and orchestrators call them)."""

import logging
import threading

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.urls import path
from django.views.decorators.http import require_GET

from dashboard.clusters import cluster_client, cluster_names, console_redis
from mqcore.clock import now_ms

log = logging.getLogger(__name__)
_lock = threading.Lock()
_cached: list[int | bool] = [0, False]  # [computed at (ms), ready]


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


def _failed_checks() -> list[str]:
    """Names of the dependencies that do not answer (database, console store, clusters)."""
    failed: list[str] = []
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as exc:
        failed.append(f"database ({type(exc).__name__})")
    try:
        console_redis().ping()
    except Exception as exc:
        failed.append(f"console_redis ({type(exc).__name__})")
    for name in cluster_names():
        try:
            cluster_client(name).ping()
        except Exception as exc:
            failed.append(f"cluster {name} ({type(exc).__name__})")
    return failed


def ready_now() -> bool:
    """The readiness answer, recomputed at most once per ``READYZ_CACHE_S`` per process."""
    ttl_ms = int(float(getattr(settings, "READYZ_CACHE_S", 5)) * 1000)
    with _lock:
        at, ok = _cached
        if at and now_ms() - at < ttl_ms:
            return ok
        failed = _failed_checks()
        if failed:
            log.warning("not ready: %s", ", ".join(failed))
        _cached[:] = [now_ms(), not failed]
        return not failed


def reset_ready_cache() -> None:
    with _lock:
        _cached[:] = [0, False]


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
