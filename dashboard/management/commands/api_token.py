"""``manage.py api_token create USERNAME [--name N]`` / ``api_token revoke USERNAME|PREFIX``.

``create`` prints the new token once (only its hash is stored); ``revoke`` revokes
every active token of a user, or the one token whose prefix (``mqc_...``) is given.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from dashboard.models import ApiToken
from dashboard.models.tokens import TOKEN_PREFIX


class Command(BaseCommand):
    help = "Create or revoke per-user API tokens (Authorization: Bearer TOKEN)."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="create a token and print it once")
        create.add_argument("username")
        create.add_argument("--name", default="default", help="a label, e.g. the script's name")
        revoke = sub.add_parser("revoke", help="revoke a user's tokens, or one by prefix")
        revoke.add_argument("target", help="USERNAME (all tokens) or a token prefix (mqc_...)")
        sub.add_parser("list", help="list tokens (prefixes only)")

    def handle(self, *args: Any, **options: Any) -> None:
        action = options["action"]
        if action == "create":
            self._create(options["username"], options["name"])
        elif action == "revoke":
            self._revoke(options["target"])
        else:
            self._list()

    def _create(self, username: str, name: str) -> None:
        user_model = get_user_model()
        try:
            user = user_model.objects.get(username=username)
        except user_model.DoesNotExist:
            raise CommandError(f"no user named {username!r}") from None
        if not user.is_active:
            raise CommandError(f"user {username!r} is not active")
        if not name or len(name) > 100:
            raise CommandError("--name must be 1 to 100 characters")
        _, token = ApiToken.issue(user, name=name)
        self.stdout.write(token)
        self.stderr.write("Store this token now: it is shown only once.")

    def _revoke(self, target: str) -> None:
        active = ApiToken.objects.filter(revoked_at__isnull=True)
        if target.startswith(TOKEN_PREFIX):
            if len(target) < len(TOKEN_PREFIX) + 4:
                raise CommandError("give at least 4 characters after the prefix")
            rows = active.filter(key_prefix__startswith=target[:12])
        else:
            user_model = get_user_model()
            if not user_model.objects.filter(username=target).exists():
                raise CommandError(f"no user named {target!r} and no token prefix")
            rows = active.filter(user__username=target)
        count = rows.update(revoked_at=timezone.now())
        if count == 0:
            raise CommandError(f"no active token matches {target!r}")
        self.stdout.write(f"revoked {count} token(s)")

    def _list(self) -> None:
        for row in ApiToken.objects.select_related("user").order_by(
            "user__username", "-created_at"
        ):
            state = "revoked" if row.revoked_at else "active"
            used = row.last_used_at.isoformat() if row.last_used_at else "never"
            self.stdout.write(f"{row.key_prefix}  {row.user.username}  {row.name}  {state}  {used}")
