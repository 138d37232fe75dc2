"""Per-user API tokens for scripts (``Authorization: Bearer TOKEN``).

Only a SHA-256 of the token is stored; the token itself is shown once at creation.
A token expires (``API_TOKEN_DAYS`` by default) and is read-only unless issued for
writes; issue and revoke are audited (``manage.py api_token``).
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone

TOKEN_PREFIX = "mqc_"  # noqa: S105 (a public marker, not a secret)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class ApiToken(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100, default="default")
    key_hash = models.CharField(max_length=64, unique=True)
    key_prefix = models.CharField(max_length=12)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)  # None: never (not issued so)
    read_only = models.BooleanField(default=True)  # GET/HEAD only, whatever the user's role

    class Meta:
        ordering = ("-created_at",)

    def __str__(self) -> str:
        return f"{self.key_prefix}… ({self.user_id}, {self.name})"

    @classmethod
    def issue(
        cls,
        user: object,
        name: str = "default",
        *,
        days: int | None = None,
        read_only: bool = True,
    ) -> tuple[ApiToken, str]:
        """Create a token for ``user``; returns the row and the plain token (shown once).

        It expires after ``days`` (default ``settings.API_TOKEN_DAYS``) and, unless
        ``read_only=False``, allows only reads. Audited by the caller's service.
        """
        days = int(settings.API_TOKEN_DAYS if days is None else days)
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        row = cls.objects.create(
            user=user,
            name=name,
            key_hash=hash_token(token),
            key_prefix=token[:12],
            expires_at=timezone.now() + timedelta(days=days),
            read_only=read_only,
        )
        return row, token

    @classmethod
    def lookup(cls, token: str) -> ApiToken | None:
        """The active token row for ``token``, or None."""
        return (
            cls.objects.select_related("user")
            .filter(key_hash=hash_token(token), revoked_at__isnull=True, user__is_active=True)
            .filter(models.Q(expires_at__isnull=True) | models.Q(expires_at__gt=timezone.now()))
            .first()
        )
