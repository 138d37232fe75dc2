"""From OIDC claims to a console identity: usernames, groups claims, the role map."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from dashboard.sso.mapping import (
    RoleGrant,
    SSORefused,
    claim_at,
    identity_from_claims,
    parse_role_map,
)

ROLE_MAP = parse_role_map(
    {
        "sre-admins": "Admin",
        "sre-viewers": "Viewer",
        "orders-oncall": {"role": "Operator", "topics": ["orders-*"], "cluster": "prod"},
    }
)


def identity(claims: dict, *, username_claim: str = "preferred_username", groups: str = "groups"):
    return identity_from_claims(
        claims, username_claim=username_claim, groups_claim=groups, role_map=ROLE_MAP
    )


def test_role_map_accepts_role_names_and_scoped_entries() -> None:
    assert ROLE_MAP["sre-admins"] == RoleGrant("Admin")
    assert ROLE_MAP["orders-oncall"] == RoleGrant("Operator", ("orders-*",), "prod")


@pytest.mark.parametrize(
    "raw",
    [
        [],
        {"g": "Root"},
        {"g": {"topics": ["x"]}},
        {"g": {"role": "Viewer", "topics": "orders-*"}},
        {"g": {"role": "Viewer", "topics": [""]}},
        {"g": {"role": "Viewer", "cluster": 3}},
    ],
)
def test_bad_role_maps_are_configuration_errors(raw: object) -> None:
    with pytest.raises(ImproperlyConfigured, match="OIDC_ROLE_MAP"):
        parse_role_map(raw)


def test_username_is_prefixed_and_groups_map_to_grants() -> None:
    found = identity(
        {
            "sub": "0f3a",
            "preferred_username": "alice",
            "email": "alice@example.com",
            "given_name": "Alice",
            "groups": ["staff", "sre-admins", "orders-oncall"],
        }
    )
    assert found.username == "oidc:alice"
    assert found.email == "alice@example.com"
    assert found.first_name == "Alice"
    assert set(found.grants) == {"sre-admins", "orders-oncall"}
    assert found.provider_groups == ("staff", "sre-admins", "orders-oncall")


def test_sub_can_name_the_user_and_keycloak_paths_and_nested_claims_work() -> None:
    found = identity(
        {"sub": "f81d4fae", "realm_access": {"roles": ["/sre-viewers"]}},
        username_claim="sub",
        groups="realm_access.roles",
    )
    assert found.username == "oidc:f81d4fae"
    assert set(found.grants) == {"sre-viewers"}


def test_a_single_string_groups_claim_and_urls_as_claim_names() -> None:
    claims = {"preferred_username": "bob", "https://example.com/groups": "sre-viewers"}
    assert claim_at(claims, "https://example.com/groups") == "sre-viewers"
    assert set(identity(claims, groups="https://example.com/groups").grants) == {"sre-viewers"}


@pytest.mark.parametrize(
    ("claims", "reason"),
    [
        ({"groups": ["sre-admins"]}, "did not send the claim 'preferred_username'"),
        ({"preferred_username": "  ", "groups": ["sre-admins"]}, "did not send the claim"),
        ({"preferred_username": ["a"], "groups": ["sre-admins"]}, "did not send the claim"),
        ({"preferred_username": "a\nb", "groups": ["sre-admins"]}, "not a usable name"),
        ({"preferred_username": "x" * 200, "groups": ["sre-admins"]}, "not a usable name"),
        ({"preferred_username": "carol"}, "did not send a 'groups' claim"),
        ({"preferred_username": "carol", "groups": {"a": 1}}, "did not send a 'groups' claim"),
        ({"preferred_username": "carol", "groups": [1, 2]}, "did not send a 'groups' claim"),
        ({"preferred_username": "carol", "groups": []}, "none of your groups (none)"),
        (
            {"preferred_username": "carol", "groups": ["<b>marketing</b>"]},
            "none of your groups (<b>marketing</b>)",
        ),
    ],
)
def test_bad_or_missing_claims_are_refused_with_a_reason(claims: dict, reason: str) -> None:
    with pytest.raises(SSORefused) as refused:
        identity(claims)
    assert reason in str(refused.value)
