from typing import Any

from django.conf import settings
from django.http import HttpRequest

from dashboard.clusters import UnknownClusterError, cluster_names, read_only
from dashboard.permissions import Action, has_action, has_action_somewhere


def console(request: HttpRequest) -> dict[str, Any]:
    """Cluster list, the current cluster (from the URL), the poll interval and the export
    row limit (the export buttons state it), for the frame."""
    match = getattr(request, "resolver_match", None)
    current = (match.kwargs.get("cluster") if match else None) or cluster_names()[0]
    user = getattr(request, "user", None)
    return {
        "clusters": cluster_names(),
        "current_cluster": current,
        "poll_seconds": settings.COLLECT_INTERVAL_S,
        "export_max_rows": settings.EXPORT_MAX_ROWS,
        "can_manage_access": has_action(user, Action.MANAGE_ACCESS),
        "can_create_topics": _can_create_topics(user, current),
    }


def _can_create_topics(user: Any, cluster: str) -> bool:
    """The overview's "Create topic": some grant carries ``manage_topics`` (the service then
    checks the new name against it) and the cluster is writable."""
    if user is None or not has_action_somewhere(user, Action.MANAGE_TOPICS):
        return False
    try:
        return not read_only(cluster)
    except UnknownClusterError:
        return False
