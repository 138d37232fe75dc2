"""Run by the R19 test in a subprocess (its own SQLite file): the console's "delete all
matching" (key ``del``) on topic ``orders``, audited; prints the answer as JSON."""

from __future__ import annotations

import json
import sys

import django


def main() -> None:
    django.setup()
    from django.contrib.auth.models import User

    from dashboard.services.audit import Actor
    from dashboard.services.retries import retries_act
    from tests.integration.dlq_support import role_user

    user = User.objects.filter(username="r19-operator").first() or role_user(
        "r19-operator", "Operator"
    )
    answer = retries_act(
        Actor(user, cluster="default", topic="orders"),
        action="delete",
        all_matching=True,
        filters={"key": "del"},
        cursor=sys.argv[1] if len(sys.argv) > 1 else None,
        reason="R19",
        confirm="orders",
    )
    print(json.dumps(answer))


if __name__ == "__main__":
    main()
