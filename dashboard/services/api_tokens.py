"""Issuing and revoking API tokens, each audited (``manage.py api_token``), and whether
a token's user may use it now.

A single sign-on or LDAP user's groups are synced from the identity provider or directory
at each login
(:mod:`dashboard.sso.accounts`), so a token keeps the groups of the last login: its
tokens work only while that login is less than ``SSO_TOKEN_REVALIDATE_DAYS`` old, and a
user removed at the provider (who cannot log in any more) loses them within that time.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone

from dashboard.models import ApiToken, AuditEventType
from dashboard.services.audit import Actor, audited
from dashboard.sso.mapping import LDAP_PREFIX, is_external_username

__all__ = ["MAX_TOKEN_DAYS", "issue_token", "revoke_tokens", "token_refusal"]

MAX_TOKEN_DAYS = 366


def issue_token(
    actor: Actor, *, user: Any, name: str, days: int, read_only: bool
) -> tuple[ApiToken, str]:
    """A new token for ``user`` (validated first), with its intent and outcome rows."""
    if not name or len(name) > 100:
        raise ValueError("the name must be 1 to 100 characters")
    if not 1 <= days <= MAX_TOKEN_DAYS:
        raise ValueError(f"days must be 1 to {MAX_TOKEN_DAYS}")
    if not user.is_active:
        raise ValueError(f"user {user.get_username()!r} is not active")
    detail = {
        "user": user.get_username(),
        "name": name,
        "days": days,
        "scope": "read" if read_only else "read-write",
    }
    with audited(actor, AuditEventType.API_TOKEN_ISSUE, detail=detail) as audit:
        row, token = ApiToken.issue(user, name=name, days=days, read_only=read_only)
        expires = row.expires_at.isoformat() if row.expires_at else ""
        audit.set("issued", detail={"prefix": row.key_prefix, "expires_at": expires})
    return row, token


def revoke_tokens(actor: Actor, rows: QuerySet[ApiToken], *, target: str) -> int:
    """Revoke the active tokens among ``rows``; audited with their prefixes."""
    active = rows.filter(revoked_at__isnull=True)
    prefixes = list(active.values_list("key_prefix", flat=True)[:1000])
    detail = {"target": target[:150], "prefixes": prefixes}
    with audited(actor, AuditEventType.API_TOKEN_REVOKE, detail=detail) as audit:
        count = active.update(revoked_at=timezone.now())
        audit.set("revoked" if count else "none", counts={"revoked": count})
    return count


def token_refusal(user: Any) -> str | None:
    """Why a token of ``user`` may not be used now (the 401 message), or None: a single
    sign-on or LDAP user must have logged in within ``SSO_TOKEN_REVALIDATE_DAYS``."""
    username = str(user.get_username())
    if not is_external_username(username):
        return None  # a local account: its groups are the console's own
    days = int(settings.SSO_TOKEN_REVALIDATE_DAYS)
    last = user.last_login
    if last is not None and timezone.now() - last < timedelta(days=days):
        return None
    how = "LDAP" if username.startswith(LDAP_PREFIX) else "single sign-on"
    return (
        f"this API token belongs to a {how} user who has not logged in for "
        f"{days} days or more: log in to the console again through {how} "
        "(which renews your groups), then the token works again"
    )
