"""The whole Celery beat schedule, in one place (config/celery.py installs it).

One entry per configured cluster, so a slow or failing cluster never delays
the others; each task expires after one interval (a backlog never piles up).
The retention housekeeper gets an entry only for clusters with ``retention``
rules in ``MQ_CLUSTERS`` (off by default). Several beats may run this schedule: only the
one holding the leader lock sends (``dashboard.beat``).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

__all__ = ["beat_schedule"]


def beat_schedule() -> dict[str, dict[str, Any]]:
    interval = float(settings.COLLECT_INTERVAL_S)
    out: dict[str, dict[str, Any]] = {
        f"collect:{name}": {
            "task": "dashboard.tasks.collect.collect_cluster_task",
            "schedule": interval,
            "args": (name,),
            "options": {"expires": interval},
        }
        for name in settings.MQ_CLUSTERS
    }
    every = float(settings.HOUSEKEEP_INTERVAL_S)
    for name, options in settings.MQ_CLUSTERS.items():
        if every > 0 and (options or {}).get("retention"):
            out[f"housekeep:{name}"] = {
                "task": "dashboard.tasks.housekeep.housekeep_cluster_task",
                "schedule": every,
                "args": (name,),
                "options": {"expires": every},
            }
    return out
