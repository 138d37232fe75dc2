"""From an external identity to a console identity: username, profile and granted roles.

The one home of the group -> role mapping of every external login: OpenID Connect
claims (``OIDC_USERNAME_CLAIM``, ``OIDC_GROUPS_CLAIM``, ``OIDC_ROLE_MAP``) and LDAP
groups (``LDAP_ROLE_MAP``, :mod:`dashboard.sso.directory`). Pure functions over the
settings; nothing here touches the database. What the provider or directory sends
is treated as untrusted text: every refusal explains itself with
:class:`SSORefused`, which the console answers with a 403 page.

Each source names its users and scoped groups with its own prefix (``oidc:``,
``ldap:``); local usernames cannot contain ":", so they never collide.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from dashboard.permissions import ROLES

__all__ = [
    "GROUP_NAME_LEN",
    "LDAP_PREFIX",
    "USERNAME_PREFIX",
    "Identity",
    "RoleGrant",
    "SSOProviderError",
    "SSORefused",
    "claim_at",
    "group_collisions",
    "identity_from_claims",
    "identity_from_groups",
    "is_external_username",
    "parse_role_map",
    "scoped_group_name",
]

USERNAME_PREFIX = "oidc:"  # local usernames cannot contain ":", so SSO names never collide
LDAP_PREFIX = "ldap:"  # the users and scoped groups of LDAP logins
EXTERNAL_PREFIXES = (USERNAME_PREFIX, LDAP_PREFIX)
MAX_CLAIM_LEN = 150 - len(USERNAME_PREFIX)
GROUP_NAME_LEN = 150  # django.contrib.auth Group.name
MAX_GROUPS = 1000  # a longer groups claim is refused rather than scanned


class SSORefused(Exception):
    """The provider authenticated someone the console will not let in; the message says why.

    Not a PermissionDenied on purpose: Django's ``authenticate`` swallows those, and the
    user must see the reason.
    """


class SSOProviderError(Exception):
    """The identity provider could not be reached or answered the sign-in with an error."""


@dataclass(frozen=True, slots=True)
class RoleGrant:
    """What one provider group gives: a role, on every topic or on matching ones."""

    role: str
    topics: tuple[str, ...] = ()
    cluster: str = ""


@dataclass(frozen=True, slots=True)
class Identity:
    username: str
    email: str
    first_name: str
    last_name: str
    provider_groups: tuple[str, ...]
    grants: dict[str, RoleGrant]  # provider group -> grant, only the mapped ones
    prefix: str = USERNAME_PREFIX  # of the username and of the scoped groups


def is_external_username(username: str) -> bool:
    """Whether ``username`` is an account of single sign-on or LDAP, whose groups are
    rewritten at each login (never edited in the console)."""
    return username.startswith(EXTERNAL_PREFIXES)


def parse_role_map(raw: Any, setting: str = "OIDC_ROLE_MAP") -> dict[str, RoleGrant]:
    """Validate a role map (``setting`` names it in errors): provider group -> role name
    or {role, topics, cluster}."""
    example = 'e.g. {"sre-admins": "Admin", "oncall": {"role": "Operator", "topics": ["orders-*"]}}'
    if not isinstance(raw, Mapping):
        raise ImproperlyConfigured(f"{setting} must be a JSON object; {example}")
    result: dict[str, RoleGrant] = {}
    for group, value in raw.items():
        spec = {"role": value} if isinstance(value, str) else value
        if not isinstance(spec, Mapping) or spec.get("role") not in ROLES:
            raise ImproperlyConfigured(
                f"{setting}[{group!r}] must name a role ({', '.join(ROLES)}); {example}"
            )
        topics: Any = spec.get("topics", [])
        cluster = spec.get("cluster", "")
        if not isinstance(topics, list) or not all(isinstance(t, str) and t for t in topics):
            raise ImproperlyConfigured(f"{setting}[{group!r}].topics must list patterns")
        if not isinstance(cluster, str):
            raise ImproperlyConfigured(f"{setting}[{group!r}].cluster must be a string")
        result[str(group)] = RoleGrant(str(spec["role"]), tuple(topics), cluster)
    return result


def scoped_group_name(provider_group: str, prefix: str = USERNAME_PREFIX) -> str:
    """The console group of a topic-scoped mapping: ``oidc:<provider group>`` (``prefix``
    ``ldap:`` for LDAP), cut to the length of a group name (see :func:`group_collisions`)."""
    return (prefix + provider_group)[:GROUP_NAME_LEN]


def group_collisions(
    role_map: Mapping[str, RoleGrant], prefix: str = USERNAME_PREFIX
) -> dict[str, tuple[str, ...]]:
    """Console group name -> the topic-scoped provider groups of ``role_map`` that are cut
    to it, where more than one is: their grants would merge into one group."""
    by_name: dict[str, list[str]] = {}
    for provider_group, grant in role_map.items():
        if grant.topics:
            by_name.setdefault(scoped_group_name(provider_group, prefix), []).append(provider_group)
    return {name: tuple(groups) for name, groups in by_name.items() if len(groups) > 1}


def _refuse_collision(
    granted: Mapping[str, RoleGrant],
    role_map: Mapping[str, RoleGrant],
    prefix: str,
    setting: str,
) -> None:
    for name, provider_groups in group_collisions(role_map, prefix).items():
        if any(g in granted for g in provider_groups):
            shown = ", ".join(repr(g[:60] + "…") for g in provider_groups[:5])
            raise SSORefused(
                f"The provider groups {shown} all become the console group {name[:60]!r}… "
                f"(group names are cut to {GROUP_NAME_LEN} characters), so their grants "
                f"would merge. Ask your administrator to shorten them in {setting}."
            )


def claim_at(claims: Mapping[str, Any], path: str) -> Any:
    """The claim at ``path``; dots walk nested objects (Keycloak's ``realm_access.roles``).

    A claim whose own name contains dots (``https://example.com/groups``) is found first.
    """
    if path in claims:
        return claims[path]
    node: Any = claims
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _text(claims: Mapping[str, Any], name: str) -> str:
    value = claims.get(name)
    return value.strip()[:150] if isinstance(value, str) else ""


def _username(claims: Mapping[str, Any], claim: str) -> str:
    value = claim_at(claims, claim)
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        raise SSORefused(
            f"The identity provider did not send the claim {claim!r} that names you; "
            "ask your administrator to release it to this console."
        )
    value = value.strip()
    if len(value) > MAX_CLAIM_LEN or not value.isprintable():
        raise SSORefused(f"The claim {claim!r} is not a usable name (too long or not printable).")
    return USERNAME_PREFIX + value


def _groups(claims: Mapping[str, Any], claim: str) -> tuple[str, ...]:
    value = claim_at(claims, claim)
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(g, str) for g in value):
        raise SSORefused(
            f"The identity provider did not send a {claim!r} claim listing your groups; "
            "ask your administrator to add it to the console's client."
        )
    if len(value) > MAX_GROUPS:
        raise SSORefused(f"The {claim!r} claim lists more than {MAX_GROUPS} groups.")
    return tuple(dict.fromkeys(value))


def identity_from_claims(
    claims: Mapping[str, Any],
    *,
    username_claim: str,
    groups_claim: str,
    role_map: Mapping[str, RoleGrant],
) -> Identity:
    """The console identity of ``claims``, or SSORefused when no mapped group grants a role
    (see :func:`identity_from_groups`)."""
    return identity_from_groups(
        _username(claims, username_claim),
        _groups(claims, groups_claim),
        role_map=role_map,
        email=_text(claims, "email"),
        first_name=_text(claims, "given_name"),
        last_name=_text(claims, "family_name"),
    )


def identity_from_groups(
    username: str,
    groups: tuple[str, ...],
    *,
    role_map: Mapping[str, RoleGrant],
    email: str = "",
    first_name: str = "",
    last_name: str = "",
    prefix: str = USERNAME_PREFIX,
    setting: str = "OIDC_ROLE_MAP",
) -> Identity:
    """The console identity of ``username`` (already prefixed) in ``groups``, or SSORefused
    when no group of ``role_map`` (``setting``) grants a role: deny by default.

    Groups are matched exactly, and with a leading "/" removed (Keycloak sends full group
    paths such as ``/sre-admins``).
    """
    grants: dict[str, RoleGrant] = {}
    for group in groups:
        for key in (group, group.lstrip("/")):
            if key in role_map:
                grants[key] = role_map[key]
                break
    _refuse_collision(grants, role_map, prefix, setting)
    if not grants:
        shown = ", ".join(groups[:20]) or "none"
        raise SSORefused(
            f"You signed in as {username}, but none of your groups ({shown}) gives access to "
            "this console. Ask your administrator to add you to a group mapped to "
            "Viewer, Operator or Admin."
        )
    return Identity(
        username=username,
        email=email,
        first_name=first_name,
        last_name=last_name,
        provider_groups=groups,
        grants=grants,
        prefix=prefix,
    )
