"""``manage.py check`` (and every start) reports SSO settings that cannot work."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, Warning, register
from django.core.exceptions import ImproperlyConfigured

from dashboard.sso.mapping import GROUP_NAME_LEN, group_collisions, parse_role_map

__all__ = ["sso_settings_check"]

REQUIRED = (
    "OIDC_RP_CLIENT_SECRET",
    "OIDC_OP_AUTHORIZATION_ENDPOINT",
    "OIDC_OP_TOKEN_ENDPOINT",
    "OIDC_OP_USER_ENDPOINT",
    "OIDC_OP_JWKS_ENDPOINT",
)


@register()
def sso_settings_check(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    if not getattr(settings, "CONSOLE_SSO_ENABLED", False):
        if not getattr(settings, "CONSOLE_LOCAL_LOGIN", True):
            return [
                Error(
                    "CONSOLE_LOCAL_LOGIN is off and single sign-on is not configured: "
                    "nobody can log in",
                    hint="set OIDC_RP_CLIENT_ID and the OIDC_OP_* endpoints, "
                    "or CONSOLE_LOCAL_LOGIN=1",
                    id="opsdash.E101",
                )
            ]
        return []
    errors: list[CheckMessage] = [
        Error(f"single sign-on needs {name}", id="opsdash.E102")
        for name in REQUIRED
        if not getattr(settings, name, None)
    ]
    try:
        role_map = parse_role_map(getattr(settings, "OIDC_ROLE_MAP", {}))
    except ImproperlyConfigured as exc:
        return [*errors, Error(str(exc), id="opsdash.E103")]
    if not role_map:
        errors.append(
            Error(
                "OIDC_ROLE_MAP is empty: every single sign-on login would be refused",
                hint='e.g. OIDC_ROLE_MAP=\'{"sre-admins": "Admin"}\'',
                id="opsdash.E103",
            )
        )
    for name, groups in group_collisions(role_map).items():
        errors.append(
            Warning(
                f"OIDC_ROLE_MAP: {len(groups)} topic-scoped provider groups become the one "
                f"console group {name[:60]!r}... once cut to {GROUP_NAME_LEN} characters; "
                "their users' logins are refused",
                hint="shorten those provider group names",
                id="opsdash.W104",
            )
        )
    return errors
