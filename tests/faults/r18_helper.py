"""Run by the R18 test in a subprocess (its own SQLite file): start a bulk replay job."""

from __future__ import annotations

import sys

import django


def main() -> None:
    django.setup()
    from django.contrib.auth.models import Group, User

    from dashboard.permissions import roles_sync
    from dashboard.services import bulk_replay as svc
    from dashboard.services.audit import Actor

    roles_sync()
    user = User.objects.create_user("r18-operator", password="pw-r18-123456")
    user.groups.add(Group.objects.get(name="Operator"))
    job = svc.dlq_bulk_preview(
        Actor(user, cluster="default", topic="orders"), selection=svc.BulkSelection()
    )
    svc.dlq_bulk_start(Actor(user), job=job, reason="R18", rate_limit=int(sys.argv[1]))
    print(job.pk)


if __name__ == "__main__":
    main()
