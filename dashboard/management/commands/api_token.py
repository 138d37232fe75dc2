"""``manage.py api_token create USERNAME [--name N] [--days D] [--write]`` /
``api_token revoke USERNAME|PREFIX`` / ``api_token list``.

``create`` prints the new token once (only its hash is stored). A token expires after
``--days`` (``API_TOKEN_DAYS``, 90, by default) and is read-only unless ``--write``
is given (then it carries the user's role for writes too). ``revoke`` revokes every
active token of a user, or the one token whose prefix (``mqc_...``) is given. Issue
and revoke are audited.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from dashboard.models import ApiToken
from dashboard.models.tokens import TOKEN_PREFIX
from dashboard.services.api_tokens import issue_token, revoke_tokens
from dashboard.services.audit import Actor, Origin


def _system() -> Actor:
    """The command's actor: the system, with a request id of its own."""
    return Actor(None, Origin.system("api-token"))


class Command(BaseCommand):
    help = "Create or revoke per-user API tokens (Authorization: Bearer TOKEN)."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="create a token and print it once")
        create.add_argument("username")
        create.add_argument("--name", default="default", help="a label, e.g. the script's name")
        create.add_argument(
            "--days", type=int, default=None, help="days until it expires (API_TOKEN_DAYS)"
        )
        create.add_argument(
            "--write", action="store_true", help="allow writes too (default: read-only)"
        )
        revoke = sub.add_parser("revoke", help="revoke a user's tokens, or one by prefix")
        revoke.add_argument("target", help="USERNAME (all tokens) or a token prefix (mqc_...)")
        sub.add_parser("list", help="list tokens (prefixes only)")

    def handle(self, *args: Any, **options: Any) -> None:
        action = options["action"]
        if action == "create":
            days = options["days"]
            days = int(settings.API_TOKEN_DAYS) if days is None else days
            self._create(options["username"], options["name"], days, not options["write"])
        elif action == "revoke":
            self._revoke(options["target"])
        else:
            self._list()

    def _create(self, username: str, name: str, days: int, read_only: bool) -> None:
        user_model = get_user_model()
        try:
            user = user_model.objects.get(username=username)
        except user_model.DoesNotExist:
            raise CommandError(f"no user named {username!r}") from None
        try:
            _, token = issue_token(_system(), user=user, name=name, days=days, read_only=read_only)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
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
        if not rows.exists():
            raise CommandError(f"no active token matches {target!r}")
        count = revoke_tokens(_system(), rows, target=target)
        if count == 0:
            raise CommandError(f"no active token matches {target!r}")
        self.stdout.write(f"revoked {count} token(s)")

    def _list(self) -> None:
        for row in ApiToken.objects.select_related("user").order_by(
            "user__username", "-created_at"
        ):
            state = "revoked" if row.revoked_at else "active"
            if row.expires_at is not None:
                state += f" expires {row.expires_at.isoformat()}"
            state += "  read-only" if row.read_only else "  read-write"
            used = row.last_used_at.isoformat() if row.last_used_at else "never"
            self.stdout.write(f"{row.key_prefix}  {row.user.username}  {row.name}  {state}  {used}")
