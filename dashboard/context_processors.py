from typing import Any

from django.conf import settings
from django.http import HttpRequest

from dashboard.clusters import cluster_names
from dashboard.permissions import Action, has_action


def console(request: HttpRequest) -> dict[str, Any]:
    """Cluster list, the current cluster (from the URL), the poll interval and the export
    row limit (the export buttons state it), for the frame."""
    match = getattr(request, "resolver_match", None)
    current = (match.kwargs.get("cluster") if match else None) or cluster_names()[0]
    return {
        "clusters": cluster_names(),
        "current_cluster": current,
        "poll_seconds": settings.COLLECT_INTERVAL_S,
        "export_max_rows": settings.EXPORT_MAX_ROWS,
        "can_manage_access": has_action(getattr(request, "user", None), Action.MANAGE_ACCESS),
    }
