"""The authentication backend for OpenID Connect logins (authorization code flow + PKCE).

mozilla-django-oidc does the protocol (state, nonce, PKCE, token exchange, signature
checks against the provider's JWKS); this subclass decides who the user is. Claims
are the ID token's merged with the userinfo answer (Okta puts groups in the former,
Keycloak in both). A refusal raises :class:`~dashboard.sso.mapping.SSORefused`,
which the callback view answers with a 403 page that explains it.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from dashboard.sso.accounts import sync_user
from dashboard.sso.mapping import identity_from_claims, parse_role_map

__all__ = ["ConsoleOIDCBackend"]


class ConsoleOIDCBackend(OIDCAuthenticationBackend):  # type: ignore[misc]
    def get_or_create_user(self, access_token: str, id_token: str, payload: Any) -> User:
        userinfo = self.get_userinfo(access_token, id_token, payload)
        claims: dict[str, Any] = dict(payload) if isinstance(payload, dict) else {}
        if isinstance(userinfo, dict):
            claims.update(userinfo)
        identity = identity_from_claims(
            claims,
            username_claim=settings.OIDC_USERNAME_CLAIM,
            groups_claim=settings.OIDC_GROUPS_CLAIM,
            role_map=parse_role_map(settings.OIDC_ROLE_MAP),
        )
        return sync_user(identity)
