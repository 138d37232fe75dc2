"""System checks of the console's own security settings (``manage.py check --deploy``)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core import checks

__all__ = ["audit_key_check", "register"]

MIN_KEY_CHARS = 32


def audit_key_check(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    key = str(getattr(settings, "AUDIT_HMAC_KEY", "") or "")
    if len(key) >= MIN_KEY_CHARS:
        if getattr(settings, "AUDIT_SIGNED_FROM", None):
            return []
        return [
            checks.Warning(
                "AUDIT_SIGNED_FROM is unset: HMACs are checked from the first signed audit "
                "row only, so a chain stripped of them is not noticed.",
                hint="set AUDIT_SIGNED_FROM to the value manage.py audit_verify prints",
                id="dashboard.W002",
            )
        ]
    return [
        checks.Warning(
            f"AUDIT_HMAC_KEY is unset or shorter than {MIN_KEY_CHARS} characters: the audit "
            "chain is not signed, so whoever can write the database can rewrite it unnoticed.",
            hint="set AUDIT_HMAC_KEY from a secret store (e.g. openssl rand -hex 32)",
            id="dashboard.W001",
        )
    ]


def register() -> None:
    checks.register(audit_key_check, checks.Tags.security, deploy=True)
