"""``manage.py check`` (and every start) reports SSO and LDAP settings that cannot work."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, Warning, register
from django.core.exceptions import ImproperlyConfigured

from dashboard.sso.mapping import (
    GROUP_NAME_LEN,
    LDAP_PREFIX,
    USERNAME_PREFIX,
    group_collisions,
    parse_role_map,
)

__all__ = ["ldap_settings_check", "sso_settings_check"]

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
        if not getattr(settings, "CONSOLE_LOCAL_LOGIN", True) and not getattr(
            settings, "CONSOLE_LDAP_ENABLED", False
        ):
            return [
                Error(
                    "CONSOLE_LOCAL_LOGIN is off and neither single sign-on nor LDAP is "
                    "configured: nobody can log in",
                    hint="set OIDC_RP_CLIENT_ID and the OIDC_OP_* endpoints, "
                    "or LDAP_SERVER_URI, or CONSOLE_LOCAL_LOGIN=1",
                    id="opsdash.E101",
                )
            ]
        return []
    errors: list[CheckMessage] = [
        Error(f"single sign-on needs {name}", id="opsdash.E102")
        for name in REQUIRED
        if not getattr(settings, name, None)
    ]
    return [
        *errors,
        *_role_map_errors("OIDC_ROLE_MAP", USERNAME_PREFIX, "single sign-on", ("E103", "W104")),
    ]


def _role_map_errors(
    setting: str, prefix: str, login: str, ids: tuple[str, str]
) -> list[CheckMessage]:
    """A role map that cannot be read, is empty, or merges scoped groups."""
    error_id, warning_id = ids
    try:
        role_map = parse_role_map(getattr(settings, setting, {}), setting)
    except ImproperlyConfigured as exc:
        return [Error(str(exc), id=f"opsdash.{error_id}")]
    errors: list[CheckMessage] = []
    if not role_map:
        errors.append(
            Error(
                f"{setting} is empty: every {login} login would be refused",
                hint=f'e.g. {setting}=\'{{"sre-admins": "Admin"}}\'',
                id=f"opsdash.{error_id}",
            )
        )
    for name, groups in group_collisions(role_map, prefix).items():
        errors.append(
            Warning(
                f"{setting}: {len(groups)} topic-scoped provider groups become the one "
                f"console group {name[:60]!r}... once cut to {GROUP_NAME_LEN} characters; "
                "their users' logins are refused",
                hint="shorten those provider group names",
                id=f"opsdash.{warning_id}",
            )
        )
    return errors


@register()
def ldap_settings_check(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    if not getattr(settings, "CONSOLE_LDAP_ENABLED", False):
        return []
    from dashboard.sso.directory import GROUP_TYPES  # python-ldap: only when LDAP is on

    errors: list[CheckMessage] = []
    if not getattr(settings, "LDAP_USER_SEARCH_BASE", ""):
        errors.append(
            Error(
                "LDAP login needs LDAP_USER_SEARCH_BASE",
                hint="e.g. LDAP_USER_SEARCH_BASE=ou=people,dc=example,dc=com",
                id="opsdash.E105",
            )
        )
    if "%(user)s" not in str(getattr(settings, "LDAP_USER_FILTER", "")):
        errors.append(
            Error(
                "LDAP_USER_FILTER must contain %(user)s (the login name)",
                hint="e.g. (uid=%(user)s) or (sAMAccountName=%(user)s)",
                id="opsdash.E105",
            )
        )
    if getattr(settings, "LDAP_GROUP_TYPE", "") not in GROUP_TYPES:
        errors.append(
            Error(
                f"LDAP_GROUP_TYPE must be one of {', '.join(GROUP_TYPES)}",
                id="opsdash.E105",
            )
        )
    return [*errors, *_role_map_errors("LDAP_ROLE_MAP", LDAP_PREFIX, "LDAP", ("E106", "W107"))]
