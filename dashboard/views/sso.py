"""Login, the OpenID Connect flow and logout.

- Login: the password form, for local accounts unless ``CONSOLE_LOCAL_LOGIN`` is off and
  for LDAP accounts when configured (an LDAP refusal or a directory error gets an error
  page that says why), and a single sign-on link when configured.
- ``/oidc/authenticate/``, ``/oidc/callback/``: refusals get a 403 page that says why.
- Logout, at the provider too when it can.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import auth
from django.contrib.auth.views import LoginView
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render, resolve_url
from django.views.decorators.http import require_GET, require_POST
from mozilla_django_oidc.views import (
    OIDCAuthenticationCallbackView,
    OIDCAuthenticationRequestView,
)

from dashboard.guard import page_guard
from dashboard.sso.mapping import SSOProviderError, SSORefused

__all__ = ["ConsoleLoginView", "oidc_authenticate", "oidc_callback", "sso_logout"]

log = logging.getLogger(__name__)
# The error codes of OAuth 2.0 and OpenID Connect authorization answers: the only text of
# the provider's redirect the console repeats (anyone can craft a callback link, so its
# error_description is logged, never shown).
PROVIDER_ERRORS = frozenset(
    (
        "access_denied",
        "invalid_request",
        "unauthorized_client",
        "unsupported_response_type",
        "invalid_scope",
        "server_error",
        "temporarily_unavailable",
        "interaction_required",
        "login_required",
        "account_selection_required",
        "consent_required",
        "invalid_request_uri",
        "invalid_request_object",
        "request_not_supported",
        "request_uri_not_supported",
        "registration_not_supported",
    )
)


class ConsoleLoginView(LoginView):
    """Django's login view, with the SSO link, LDAP and the local-accounts switch."""

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context["sso_enabled"] = settings.CONSOLE_SSO_ENABLED
        context["local_login"] = settings.CONSOLE_LOCAL_LOGIN
        context["ldap_enabled"] = settings.CONSOLE_LDAP_ENABLED
        return context

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not (settings.CONSOLE_LOCAL_LOGIN or settings.CONSOLE_LDAP_ENABLED):
            return page_guard()(_local_login_off)(request)
        # LDAP's refusals (no mapped group) and directory errors become error pages
        response: HttpResponse = page_guard()(super().post)(request, *args, **kwargs)
        return response


def _local_login_off(request: HttpRequest) -> HttpResponse:
    raise PermissionDenied("Local accounts are switched off: log in with single sign-on.")


@require_GET
def oidc_authenticate(request: HttpRequest) -> HttpResponse:
    """Redirect to the provider's authorization endpoint (404 when SSO is not configured)."""
    if not settings.CONSOLE_SSO_ENABLED:
        raise Http404("single sign-on is not configured")
    response: HttpResponse = OIDCAuthenticationRequestView.as_view()(request)
    return response


class _Callback(OIDCAuthenticationCallbackView):  # type: ignore[misc]
    def login_failure(self) -> HttpResponse:
        error = self.request.GET.get("error", "")
        if error:
            about = self.request.GET.get("error_description", "")[:300]
            log.warning("identity provider error %r: %r", error[:100], about)
            code = f" ({error})" if error in PROVIDER_ERRORS else ""
            raise SSOProviderError(
                f"The identity provider ended the sign-in with an error{code}. Start again "
                "from the login page; if it happens again, ask your administrator (the "
                "console's log has the provider's answer)."
            )
        raise SSORefused(
            "The sign-in could not be completed (it expired, was already used, or the "
            "provider did not accept it). Start again from the login page."
        )


@require_GET
@page_guard()
def oidc_callback(request: HttpRequest) -> HttpResponse:
    """Finish the authorization code flow; refusals and provider errors become error pages."""
    if not settings.CONSOLE_SSO_ENABLED:
        raise Http404("single sign-on is not configured")
    try:
        response: HttpResponse = _Callback.as_view()(request)
    except OSError as exc:  # requests' errors: connection refused, timeout, HTTP error
        raise SSOProviderError(
            f"Could not complete the sign-in with the identity provider ({type(exc).__name__})."
        ) from exc
    return response


@require_POST
def sso_logout(request: HttpRequest) -> HttpResponse:
    """End the console session; then, for SSO sessions, the provider's session too, by a page
    that forwards the browser (the Content-Security-Policy keeps form posts on our origin)."""
    endpoint = str(getattr(settings, "OIDC_OP_LOGOUT_ENDPOINT", "") or "")
    id_token = str(request.session.get("oidc_id_token", ""))
    after = resolve_url(settings.LOGOUT_REDIRECT_URL)
    auth.logout(request)
    if not endpoint or not id_token:
        return HttpResponseRedirect(after)
    params = {
        "id_token_hint": id_token,
        "client_id": settings.OIDC_RP_CLIENT_ID,
        "post_logout_redirect_uri": request.build_absolute_uri(after),
    }
    provider_url = f"{endpoint}{'&' if '?' in endpoint else '?'}{urlencode(params)}"
    return render(request, "registration/sso_logout.html", {"provider_url": provider_url})
