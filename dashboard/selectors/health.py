"""Readiness of the console: database, console store and every MQ deployment answer.

The answer is cached per process for ``READYZ_CACHE_S`` so that probes (which need no
login) cannot make the console ping every cluster on each request.
"""

from __future__ import annotations

import logging
import threading

from django.conf import settings
from django.db import connection

from dashboard.clusters import cluster_client, cluster_names, console_redis
from mqcore.clock import now_ms

__all__ = ["ready_now", "reset_ready_cache"]

log = logging.getLogger(__name__)
_lock = threading.Lock()
_cached: list[int | bool] = [0, False]  # [computed at (ms), ready]


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
            return bool(ok)
        failed = _failed_checks()
        if failed:
            log.warning("not ready: %s", ", ".join(failed))
        _cached[:] = [now_ms(), not failed]
        return not failed


def reset_ready_cache() -> None:
    with _lock:
        _cached[:] = [0, False]
