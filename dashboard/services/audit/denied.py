"""Refused writes leave an audit row: outcome ``denied``, at most a few per user a minute.

Every refusal of the pages and the API passes through the error answer of
:data:`dashboard.errors.ERROR_TABLE` (``dashboard.guard``, for pages and the API); it
hands a ``PermissionDenied`` of an unsafe request (POST, ...) here.
The row names the user, the view and its cluster and topic when the URL has them. A
user who keeps trying writes ``AUDIT_DENIED_PER_MINUTE`` rows a minute at most (a
counter per user and minute in the console store; in the process when the store is
down), the rest only a log line.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest

from dashboard import clusters
from dashboard.models import AuditEventType
from dashboard.services.audit.write import Actor, audit_record, origin_from_request

__all__ = ["audit_denied"]

log = logging.getLogger("opsdash.audit")
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})
_local: dict[tuple[str, int], int] = {}
_local_lock = threading.Lock()


def _minute_count(user: str) -> int:
    """How many refusals ``user`` had this minute, this one included."""
    minute = int(time.time()) // 60
    key = clusters.console_keys().denied_audit(user, minute)
    try:
        pipe = clusters.console_redis().pipeline(transaction=False)
        pipe.incr(key)
        pipe.expire(key, 120)
        return int(pipe.execute()[0])
    except Exception as exc:  # the console store is down: count in this process
        log.warning("denied-audit counter unavailable (%s); counting in process", exc)
        with _local_lock:
            for old in [k for k in _local if k[1] < minute]:
                del _local[old]
            _local[(user, minute)] = _local.get((user, minute), 0) + 1
            return _local[(user, minute)]


def audit_denied(request: HttpRequest, exc: BaseException, *, cluster: str, topic: str) -> None:
    """Record a refused write (a ``PermissionDenied`` of an unsafe request) as a ``denied``
    audit row, within the per-user rate limit; anything else is ignored."""
    if not isinstance(exc, PermissionDenied) or request.method in SAFE_METHODS:
        return
    user = getattr(request, "user", None)
    if user is None or not getattr(user, "is_authenticated", False):
        return
    name = user.get_username()
    limit = int(getattr(settings, "AUDIT_DENIED_PER_MINUTE", 10))
    match = getattr(request, "resolver_match", None)
    view = (match.url_name if match else "") or ""
    try:
        if _minute_count(name) > limit:
            what = view or request.path[:200]
            log.warning(
                "refused %s %s for %s (over %d denied rows a minute)",
                request.method,
                what,
                name,
                limit,
            )
            return
        _record(request, exc, user, view, cluster, topic)
    except Exception:  # the refusal is answered (403) whatever happens to its row
        log.exception("could not audit a refused %s %s", request.method, view)


def _record(
    request: HttpRequest, exc: BaseException, user: Any, view: str, cluster: str, topic: str
) -> None:
    actor = Actor(user, origin_from_request(request), cluster[:100], topic[:200])
    audit_record(
        actor,
        AuditEventType.ACCESS_DENIED,
        "denied",
        detail={
            "method": str(request.method),
            "view": view[:100],
            "path": request.path[:300],
            "error": str(exc)[:200],
        },
    )
