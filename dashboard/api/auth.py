"""Authentication of every ``/api/v1/`` view (:func:`api_view`): a logged-in session (a
write needs the CSRF token) or a per-user token (``Authorization: Bearer TOKEN``); else a
JSON 401, never the login page. Errors are JSON: ``{"error": "<message>", "status": <code>}``."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar, cast

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.middleware.csrf import CsrfViewMiddleware
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

from dashboard.guard import guard
from dashboard.models import ApiToken
from dashboard.permissions import Action
from dashboard.services.api_tokens import token_refusal
from dashboard.services.audit import audit_denied
from dashboard.services.audit.denied import SAFE_METHODS

__all__ = ["api_view", "json_error"]

ViewFunc = TypeVar("ViewFunc", bound=Callable[..., HttpResponse])

BEARER = "bearer "
LAST_USED_GRANULARITY_S = 60  # write last_used_at at most once a minute per token
_AUTH_REQUIRED = "authentication required (session or Bearer token)"


def json_error(status: int, message: str, **headers: str) -> JsonResponse:
    """A JSON error body with ``status``; the message must not contain secrets."""
    return JsonResponse({"error": message, "status": status}, status=status, headers=headers)


def _has_bearer(request: HttpRequest) -> bool:
    return request.headers.get("Authorization", "")[: len(BEARER)].lower() == BEARER


def _refusal(request: HttpRequest) -> str | None:
    """Authenticate by session or bearer token (sets ``request.user``): None, or the 401's
    message. A token request never uses the session (and carries no ambient credentials:
    CSRF does not apply); a single sign-on user's token needs a recent enough login."""
    if not _has_bearer(request):
        user = getattr(request, "user", None)
        ok = user is not None and user.is_authenticated and user.is_active
        return None if ok else _AUTH_REQUIRED
    token = request.headers["Authorization"][len(BEARER) :].strip()
    row = ApiToken.lookup(token) if token else None
    if row is None:
        return _AUTH_REQUIRED
    refusal = token_refusal(row.user)
    if refusal is not None:
        return refusal
    now, last = timezone.now(), row.last_used_at
    if last is None or (now - last).total_seconds() > LAST_USED_GRANULARITY_S:
        ApiToken.objects.filter(pk=row.pk).update(last_used_at=now)
    request.user = row.user
    request._api_token = row  # type: ignore[attr-defined]
    request._dont_enforce_csrf_checks = True  # type: ignore[attr-defined]
    return None


def api_view(*methods: str, action: Action | None = None) -> Callable[[ViewFunc], ViewFunc]:
    """``@api_view("GET", action=Action.VIEW)``: the method (405), the CSRF token of a
    session's write (403), a session or a token (401; a read-only token's write: 403,
    audited), then :func:`dashboard.guard.guard`: ``action`` on the URL's cluster and
    topic, the cluster looked up, the errors of :data:`dashboard.errors.ERROR_TABLE`
    answered as JSON (a refused write is audited as ``denied``)."""
    allowed = {m.upper() for m in (methods or ("GET",))}
    if "GET" in allowed:
        allowed.add("HEAD")

    def decorator(view: ViewFunc) -> ViewFunc:
        guarded = guard(lambda request, err: json_error(err.status, err.message), action)(view)

        @functools.wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if request.method not in allowed:
                allow = ", ".join(sorted(allowed))
                return json_error(405, f"method {request.method} not allowed", Allow=allow)
            unsafe = request.method not in SAFE_METHODS
            if unsafe and not _has_bearer(request):
                csrf = CsrfViewMiddleware(lambda r: HttpResponse())
                if csrf.process_view(request, view, args, kwargs) is not None:
                    return json_error(403, "CSRF check failed")
            message = _refusal(request)
            if message is not None:
                return json_error(401, message, **{"WWW-Authenticate": 'Bearer realm="api"'})
            token = getattr(request, "_api_token", None)
            if token is not None and token.read_only and unsafe:
                refused = PermissionDenied("this API token is read-only")
                where = {k: str(kwargs.get(k, "")) for k in ("cluster", "topic")}
                audit_denied(request, refused, **where)
                return json_error(403, str(refused))
            return guarded(request, *args, **kwargs)

        return cast(ViewFunc, csrf_exempt(wrapper))

    return decorator
