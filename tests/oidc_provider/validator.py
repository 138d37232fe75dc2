"""Claims of the test provider: the user's name, e-mail and groups (a "groups" claim)."""

from typing import Any

from oauth2_provider.oauth2_validators import OAuth2Validator


class GroupsClaimValidator(OAuth2Validator):
    oidc_claim_scope = None  # every claim, whatever the scopes (like a groups mapper)

    def get_additional_claims(self, request: Any) -> dict[str, Any]:
        user = request.user
        claims: dict[str, Any] = {
            "preferred_username": user.username,
            "email": user.email,
            "given_name": user.first_name,
        }
        if not user.username.startswith("nogroups"):
            claims["groups"] = sorted(user.groups.values_list("name", flat=True))
        return claims
