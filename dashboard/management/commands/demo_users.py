"""Create (or reset) the three demo users: admin, operator and viewer.

Each user gets the group of its role ("Admin", "Operator", "Viewer"; created
here when the roles migration has not made them yet). Passwords come from
``DEMO_ADMIN_PASSWORD`` / ``DEMO_OPERATOR_PASSWORD`` / ``DEMO_VIEWER_PASSWORD``
or are generated; they are printed once and stored nowhere else in plain text.
Every run sets the passwords again, so the credentials just printed always work.

``--demo`` (what ``make demo-users`` runs) refuses unless ``make demo`` has set up
this var directory, and prints where the running demo's console is.
"""

from __future__ import annotations

import json
import os
import secrets
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from dashboard.permissions import ADMIN, OPERATOR, VIEWER

DEMO_USERS: tuple[tuple[str, str], ...] = (
    ("admin", ADMIN),
    ("operator", OPERATOR),
    ("viewer", VIEWER),
)


def _password_for(username: str) -> tuple[str, bool]:
    """The password from the environment, or a new random one (and whether it was generated)."""
    from_env = os.environ.get(f"DEMO_{username.upper()}_PASSWORD", "")
    if from_env:
        return from_env, False
    return secrets.token_urlsafe(12), True


class Command(BaseCommand):
    help = "Create or reset the demo users admin/operator/viewer and print their passwords once."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--json",
            action="store_true",
            help="print the credentials as one JSON document (the demo supervisor reads it)",
        )
        parser.add_argument(
            "--demo",
            action="store_true",
            help="for a `make demo` var directory: also print where its console is",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        url = ""
        if options["demo"]:
            marker = settings.VAR_DIR / "console.json"
            try:
                url = str(json.loads(marker.read_text())["url"])
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise CommandError(
                    f"no demo set up in {settings.VAR_DIR} (start one with `make demo`)"
                ) from exc
        user_model = get_user_model()
        created: list[dict[str, Any]] = []
        with transaction.atomic():
            for username, role in DEMO_USERS:
                group, _ = Group.objects.get_or_create(name=role)
                password, generated = _password_for(username)
                user, _ = user_model.objects.get_or_create(username=username)
                user.set_password(password)
                user.is_active = True
                user.is_staff = role == ADMIN
                user.is_superuser = role == ADMIN
                user.save()
                user.groups.set([group])
                created.append(
                    {
                        "username": username,
                        "password": password,
                        "role": role,
                        "generated": generated,
                    }
                )
        if options["json"]:
            self.stdout.write(json.dumps({"users": created}))
            return
        if url:
            self.stdout.write(f"console: {url} (if `make demo` still runs)")
        self.stdout.write("Demo users (passwords are shown only now):")
        for row in created:
            self.stdout.write(f"  {row['username']:<9} {row['password']:<20} role {row['role']}")
