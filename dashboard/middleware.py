from collections.abc import Callable

from django.conf import settings
from django.contrib.auth import logout
from django.http import HttpRequest, HttpResponse
from django.utils.cache import patch_vary_headers
from django_htmx.middleware import HtmxDetails

from mqcore.clock import now_ms

# plotly.js needs inline styles and eval-free code; htmx needs neither unsafe-inline nor eval.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; "
    "base-uri 'self'; form-action 'self'"
)


class SecurityHeadersMiddleware:
    """Adds the Content-Security-Policy header to every response."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        response.headers.setdefault("Content-Security-Policy", CSP)
        return response


class _WatchedHtmxDetails(HtmxDetails):
    """django-htmx's ``request.htmx`` that remembers whether the view asked it."""

    asked = False

    def __bool__(self) -> bool:
        self.asked = True
        return super().__bool__()


class HtmxMiddleware:
    """Sets ``request.htmx`` (as django-htmx's middleware does) and adds ``Vary: HX-Request``
    to every response whose view asked whether the request came from htmx (a region of the
    page, or the whole page): the one place the console sets that Vary."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        details = _WatchedHtmxDetails(request)
        request.htmx = details  # type: ignore[attr-defined]
        response = self.get_response(request)
        if details.asked:
            patch_vary_headers(response, ("HX-Request",))
        return response


class SessionTimeoutMiddleware:
    """Logs a session out after ``SESSION_MAX_AGE_S`` since login or
    ``SESSION_IDLE_TIMEOUT_S`` without activity, whichever comes first.

    Activity is any request but an htmx GET (live pages poll; a screen left open is
    idle). The session records the login and the last activity, the latter at most
    once a minute, so a busy session is not written on every request.
    """

    LOGIN_KEY = "_login_at"
    SEEN_KEY = "_seen_at"
    SEEN_GRANULARITY_S = 60

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            self._check(request)
        return self.get_response(request)

    def _check(self, request: HttpRequest) -> None:
        session = request.session
        now = now_ms() // 1000
        login_at = session.get(self.LOGIN_KEY)
        seen_at = session.get(self.SEEN_KEY)
        if not isinstance(login_at, int) or not isinstance(seen_at, int):
            session[self.LOGIN_KEY] = session[self.SEEN_KEY] = now
            return
        max_age = int(settings.SESSION_MAX_AGE_S)
        idle = int(settings.SESSION_IDLE_TIMEOUT_S)
        if now - login_at >= max_age or now - seen_at >= idle:
            logout(request)
            return
        polling = request.method == "GET" and request.headers.get("HX-Request") == "true"
        if not polling and now - seen_at >= self.SEEN_GRANULARITY_S:
            session[self.SEEN_KEY] = now
