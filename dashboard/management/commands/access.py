"""``manage.py access``: who can see what, and the same changes as the Access page.

    manage.py access show [--user NAME] [--json]
    manage.py access role NAME Viewer|Operator|Admin|none [--reason R]
    manage.py access group put NAME --role ROLE --scope CLUSTER/PATTERN [--scope ...]
    manage.py access group delete NAME
    manage.py access member add|remove GROUP USER
    manage.py access sensitive add|remove PATTERN [--cluster C] [--note N]

Changes are validated (nothing written on a bad name, pattern, cluster or user) and
audited as ``system`` with the ``--reason``; ``--json`` prints the result as the API
answers it.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from dashboard.selectors.access import access_overview, user_access
from dashboard.selectors.pages.params import NotFoundError
from dashboard.services import access as svc
from dashboard.services.audit import Actor, Origin


class Command(BaseCommand):
    help = "Show or change roles, topic-scoped groups and sensitive topics (audited)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="print JSON")
        parser.add_argument("--reason", default="", help="recorded in the audit log")
        sub = parser.add_subparsers(dest="what", required=True)
        show = sub.add_parser("show")
        show.add_argument("--user", default=None, help="what this user can see")
        role = sub.add_parser("role")
        role.add_argument("username")
        role.add_argument("role", help="Viewer, Operator, Admin or none")
        group = sub.add_parser("group")
        group.add_argument("op", choices=("put", "delete"))
        group.add_argument("name")
        group.add_argument("--role", default="")
        group.add_argument("--scope", action="append", default=[], help="cluster/pattern")
        member = sub.add_parser("member")
        member.add_argument("op", choices=("add", "remove"))
        member.add_argument("group")
        member.add_argument("username")
        sensitive = sub.add_parser("sensitive")
        sensitive.add_argument("op", choices=("add", "remove"))
        sensitive.add_argument("pattern")
        sensitive.add_argument("--cluster", default="")
        sensitive.add_argument("--note", default="")

    def handle(self, *args: Any, **o: Any) -> None:
        actor = Actor(None, Origin.system("manage-access"))
        change: dict[str, Any] = {"actor": actor, "reason": o["reason"]}
        try:
            if o["what"] == "show":
                result = (
                    user_access(user=None, username=o["user"])
                    if o["user"]
                    else access_overview(user=None)
                )
            elif o["what"] == "role":
                result = svc.role_set(**change, username=o["username"], role=o["role"])
            elif o["what"] == "group" and o["op"] == "put":
                result = svc.group_put(**change, name=o["name"], role=o["role"], scopes=o["scope"])
            elif o["what"] == "group":
                result = svc.group_delete(**change, name=o["name"])
            elif o["what"] == "member":
                result = svc.member_set(
                    **change, group=o["group"], username=o["username"], member=o["op"] == "add"
                )
            elif o["op"] == "add":
                result = svc.sensitive_add(
                    **change, cluster=o["cluster"], pattern=o["pattern"], note=o["note"]
                )
            else:
                result = svc.sensitive_remove(**change, cluster=o["cluster"], pattern=o["pattern"])
        except (ValueError, NotFoundError) as exc:
            raise CommandError(str(exc)) from None
        if o["json"]:
            self.stdout.write(json.dumps(result, ensure_ascii=False))
        else:
            self.stdout.write(_human(result))


def _human(result: dict[str, Any]) -> str:
    if "users" in result:
        lines = [
            f"{u['username']}: {u['role'] or 'no role'} ({', '.join(u['groups']) or '-'})"
            for u in result["users"]
        ]
        for g in result["groups"]:
            scopes = ", ".join(g["scopes"]) or "every topic"
            lines.append(f"group {g['name']}: {g['role'] or 'custom'} on {scopes}")
        lines += [f"sensitive {s['scope']}" for s in result["sensitive"]]
        return "\n".join(lines)
    if "clusters" in result:
        lines = [f"{result['username']}: {result['role'] or 'no role'}"]
        for c in result["clusters"]:
            seen = [
                t["topic"] + (" (masked)" if t["masked"] else "")
                for t in c["topics"]
                if t["visible"]
            ]
            lines.append(f"{c['cluster']}: {len(seen)}/{c['total']} topics: {', '.join(seen)}")
        return "\n".join(lines)
    return json.dumps(result, ensure_ascii=False)
