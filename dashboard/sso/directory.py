"""The authentication backend for LDAP logins through the login form (django-auth-ldap).

django-auth-ldap does the protocol: it finds the user's entry (``LDAP_USER_SEARCH_BASE``,
``LDAP_USER_FILTER``, bound as ``LDAP_BIND_DN``), checks the password by binding as that
entry, and lists the entry's groups (``LDAP_GROUP_SEARCH_BASE``, ``LDAP_GROUP_TYPE``).
This subclass decides who the user is, with the mapping of single sign-on
(:mod:`dashboard.sso.mapping`, ``LDAP_ROLE_MAP``): the console user is
``ldap:<login name>``, its groups are replaced at every login (a group change in the
directory applies at the next login), and a user in no mapped group is refused with
:class:`~dashboard.sso.mapping.SSORefused` (403). A directory that cannot be reached
raises :class:`DirectoryUnavailable` (502) rather than "wrong password".

The settings are plain values from the environment (``config/settings/base.py``); they
become django-auth-ldap's objects here, so the settings module never imports ``ldap``.
"""

from __future__ import annotations

from typing import Any

import ldap  # type: ignore[import-untyped]  # python-ldap ships no types
from django.conf import settings
from django.contrib.auth.models import User
from django_auth_ldap.backend import LDAPBackend, ldap_error
from django_auth_ldap.config import (
    GroupOfNamesType,
    GroupOfUniqueNamesType,
    LDAPGroupType,
    LDAPSearch,
    NestedActiveDirectoryGroupType,
    NestedGroupOfNamesType,
    PosixGroupType,
)

from dashboard.sso.accounts import sync_user
from dashboard.sso.mapping import (
    LDAP_PREFIX,
    SSOProviderError,
    identity_from_groups,
    parse_role_map,
)

__all__ = ["GROUP_TYPES", "ConsoleLDAPBackend", "DirectoryUnavailable", "ldap_options"]

# LDAP_GROUP_TYPE -> the group entries' object class and member attribute
GROUP_TYPES: dict[str, type[LDAPGroupType]] = {
    "groupOfNames": GroupOfNamesType,  # member: <user DN> (OpenLDAP, 389 DS)
    "nestedGroupOfNames": NestedGroupOfNamesType,  # the same, groups in groups too
    "groupOfUniqueNames": GroupOfUniqueNamesType,  # uniqueMember: <user DN>
    "posixGroup": PosixGroupType,  # memberUid: <uid>, and the primary gidNumber
    "activeDirectory": NestedActiveDirectoryGroupType,  # member, nested groups
}
MAX_NAME_LEN = 150 - len(LDAP_PREFIX)


class DirectoryUnavailable(SSOProviderError):
    """The LDAP directory could not be reached or answered the login with an error."""


def ldap_options() -> dict[int, Any]:
    """python-ldap connection options of the settings: timeouts and TLS checks."""
    timeout = float(settings.LDAP_TIMEOUT_S)
    options: dict[int, Any] = {
        ldap.OPT_NETWORK_TIMEOUT: timeout,
        ldap.OPT_TIMEOUT: timeout,
        ldap.OPT_REFERRALS: 0,  # Active Directory's referrals need a bind of their own
        ldap.OPT_X_TLS_REQUIRE_CERT: ldap.OPT_X_TLS_DEMAND,
    }
    if settings.LDAP_CA_FILE:
        options[ldap.OPT_X_TLS_CACERTFILE] = str(settings.LDAP_CA_FILE)
    options[ldap.OPT_X_TLS_NEWCTX] = 0  # last: applies the TLS options above
    return options


def _first(attrs: dict[str, list[str]], name: str) -> str:
    values = attrs.get(name) or [""]
    return str(values[0]).strip()[:150]


class ConsoleLDAPBackend(LDAPBackend):  # type: ignore[misc]
    @property
    def default_settings(self) -> dict[str, Any]:  # django-auth-ldap's settings hook
        user_filter = str(settings.LDAP_USER_FILTER)
        return {
            "SERVER_URI": settings.LDAP_SERVER_URI,
            "START_TLS": settings.LDAP_START_TLS,
            "BIND_DN": settings.LDAP_BIND_DN,
            "BIND_PASSWORD": settings.LDAP_BIND_PASSWORD,
            "CONNECTION_OPTIONS": ldap_options(),
            "USER_SEARCH": LDAPSearch(
                settings.LDAP_USER_SEARCH_BASE, ldap.SCOPE_SUBTREE, user_filter
            ),
            "GROUP_SEARCH": LDAPSearch(
                settings.LDAP_GROUP_SEARCH_BASE or settings.LDAP_USER_SEARCH_BASE,
                ldap.SCOPE_SUBTREE,
                str(settings.LDAP_GROUP_FILTER),
            ),
            "GROUP_TYPE": GROUP_TYPES[str(settings.LDAP_GROUP_TYPE)](name_attr="cn"),
            "CACHE_TIMEOUT": 0,  # groups are read at every login
            "ALWAYS_UPDATE_USER": False,  # sync_user keeps the profile
        }

    def authenticate(
        self, request: Any, username: str | None = None, password: str | None = None, **kw: Any
    ) -> User | None:
        name = (username or "").strip()
        if not name or len(name) > MAX_NAME_LEN or not name.isprintable():
            return None  # never a user of the directory; the form says "wrong password"
        user: User | None = super().authenticate(request, name, password, **kw)
        return user

    def ldap_to_django_username(self, username: str) -> str:
        return LDAP_PREFIX + username

    def django_to_ldap_username(self, username: str) -> str:
        return username.removeprefix(LDAP_PREFIX)

    def get_or_build_user(self, username: str, ldap_user: Any) -> tuple[User, bool]:
        """The console user of the directory entry, with the groups its LDAP groups map to
        (django-auth-ldap calls this once the password is checked)."""
        attrs = ldap_user.attrs or {}
        identity = identity_from_groups(
            username,
            tuple(sorted(ldap_user.group_names)),
            role_map=parse_role_map(settings.LDAP_ROLE_MAP, "LDAP_ROLE_MAP"),
            email=_first(attrs, "mail"),
            first_name=_first(attrs, "givenName"),
            last_name=_first(attrs, "sn"),
            prefix=LDAP_PREFIX,
            setting="LDAP_ROLE_MAP",
        )
        return sync_user(identity), False


def _directory_error(sender: Any, context: str, exception: BaseException, **kw: Any) -> None:
    """django-auth-ldap logs a directory error and answers "no such user"; the console
    says instead that the directory failed (the log has the detail)."""
    if context not in ("authenticate", "search_for_user_dn"):
        return  # the other contexts are not on the login's path
    kind = type(exception).__name__
    raise DirectoryUnavailable(
        f"The LDAP directory could not check your password ({kind}). Try again in a "
        "moment; if it happens again, ask your administrator (the console's log has "
        "the directory's answer)."
    ) from exception


ldap_error.connect(_directory_error, sender=ConsoleLDAPBackend, dispatch_uid="console-ldap")
