"""Authentication and error helpers shared by every ``/api/v1/`` module.

An API view accepts either a logged-in session (the browser) or a per-user token
(``Authorization: Bearer TOKEN``, see :class:`dashboard.models.ApiToken`). Anything
else gets a JSON 401, never a redirect to the login page. Errors are always JSON:
``{"error": "<message>", "status": <code>}``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar, cast

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.middleware.csrf import CsrfViewMiddleware
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

from dashboard.errors import HttpError
from dashboard.guard import guard
from dashboard.models import ApiToken
from dashboard.permissions import Action
from dashboard.services.api_tokens import token_refusal
from dashboard.services.audit import audit_denied

__all__ = [
    "ApiParamError",
    "TokenRefused",
    "api_login_required",
    "api_view",
    "authenticate_request",
    "json_error",
]

ViewFunc = TypeVar("ViewFunc", bound=Callable[..., HttpResponse])

BEARER = "bearer "
LAST_USED_GRANULARITY_S = 60  # write last_used_at at most once a minute per token


SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})
_AUTH_REQUIRED = "authentication required (session or Bearer token)"


def _has_bearer(request: HttpRequest) -> bool:
    return request.headers.get("Authorization", "")[: len(BEARER)].lower() == BEARER


class ApiParamError(ValueError):
    """Raised by an API view (or its parsers) when a query parameter is invalid (400)."""


class TokenRefused(Exception):
    """A valid token its user may not use now (401 with this message)."""


def json_error(status: int, message: str) -> JsonResponse:
    """A JSON error body with ``status``; the message must not contain secrets."""
    return JsonResponse({"error": message, "status": status}, status=status)


def authenticate_request(request: HttpRequest) -> bool:
    """Authenticate ``request`` by session or bearer token; sets ``request.user``.

    Returns True when a user is authenticated. A token request never uses the
    session, and a session request never needs a token. Raises TokenRefused for a
    token whose single sign-on user has not logged in recently enough.
    """
    if _has_bearer(request):
        token = request.headers["Authorization"][len(BEARER) :].strip()
        row = ApiToken.lookup(token) if token else None
        if row is None:
            return False
        refusal = token_refusal(row.user)
        if refusal is not None:
            raise TokenRefused(refusal)
        now = timezone.now()
        if (
            row.last_used_at is None
            or (now - row.last_used_at).total_seconds() > LAST_USED_GRANULARITY_S
        ):
            ApiToken.objects.filter(pk=row.pk).update(last_used_at=now)
        request.user = row.user
        request._api_token = row  # type: ignore[attr-defined]
        # Token requests are not cookie-authenticated: CSRF does not apply.
        request._dont_enforce_csrf_checks = True  # type: ignore[attr-defined]
        return True
    user = getattr(request, "user", None)
    return bool(user is not None and user.is_authenticated and user.is_active)


def _answer(request: HttpRequest, err: HttpError) -> HttpResponse:
    return json_error(err.status, err.message)


def api_login_required(view: ViewFunc, action: Action | None = None) -> ViewFunc:
    """Require a session or a bearer token (401), then :func:`dashboard.guard.guard`:
    ``action`` on the URL's cluster and topic, the cluster looked up, and the errors of
    :data:`dashboard.errors.ERROR_TABLE` answered as JSON (403, 404, 400, 503; a refused
    write is audited as ``denied``)."""
    guarded = guard(_answer, action)(view)

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            message = None if authenticate_request(request) else _AUTH_REQUIRED
        except TokenRefused as exc:
            message = str(exc)
        if message is not None:
            response = json_error(401, message)
            response["WWW-Authenticate"] = 'Bearer realm="api"'
            return response
        token = getattr(request, "_api_token", None)
        if token is not None and token.read_only and request.method not in SAFE_METHODS:
            refused = PermissionDenied("this API token is read-only")
            audit_denied(request, refused, cluster=str(kwargs.get("cluster", "")),
                         topic=str(kwargs.get("topic", "")))  # fmt: skip
            return json_error(403, str(refused))
        return guarded(request, *args, **kwargs)

    # Bearer-token clients send no CSRF cookie; session POSTs are checked inside
    # the view's own decorators (see api_view).
    return cast(ViewFunc, wrapper)


def api_view(*methods: str, action: Action | None = None) -> Callable[[ViewFunc], ViewFunc]:
    """``@api_view("GET", action=Action.VIEW)``: method check (405 JSON) +
    :func:`api_login_required` (with the guard's ``action``).

    Session-authenticated unsafe methods (POST, ...) still need the CSRF token;
    bearer-token requests are exempt because they carry no ambient credentials.
    """
    allowed = {m.upper() for m in (methods or ("GET",))}
    if "GET" in allowed:
        allowed.add("HEAD")

    def decorator(view: ViewFunc) -> ViewFunc:
        inner = api_login_required(view, action)

        @functools.wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if request.method not in allowed:
                response = json_error(405, f"method {request.method} not allowed")
                response["Allow"] = ", ".join(sorted(allowed))
                return response
            if request.method not in SAFE_METHODS and not _has_bearer(request):
                reason = CsrfViewMiddleware(lambda r: HttpResponse()).process_view(
                    request, view, args, kwargs
                )
                if reason is not None:
                    return json_error(403, "CSRF check failed")
            return inner(request, *args, **kwargs)

        return cast(ViewFunc, csrf_exempt(wrapper))

    return decorator
