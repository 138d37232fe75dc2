"""The leases page: live partition leases and consumers of a topic, and the lease history."""

from __future__ import annotations

from typing import Any

from dashboard import clusters, store
from dashboard.selectors.pages.params import NotFoundError
from dashboard.selectors.pages.snapshot import topic_visible_require
from mqcore.errors import UnknownGroupError, UnknownTopicError
from mqcore.models import ConsumerInfo, LeaseInfo

__all__ = ["TIMELINE_LIMIT", "leases_get"]

TIMELINE_LIMIT = 200


def leases_get(cluster: str, topic: str, *, user: Any, group: str | None = None) -> dict[str, Any]:
    """Live leases and consumers of ``topic`` (optionally one group) plus the timeline.

    The timeline is the newest ownership changes the collectors recorded (at most
    ``TIMELINE_LIMIT`` of the topic, then filtered to ``group``).
    """
    topic_visible_require(user, cluster, topic)
    admin = clusters.admin(cluster)
    try:
        leases: list[LeaseInfo] = admin.leases(topic, group)
        consumers: list[ConsumerInfo] = admin.consumers(topic, group)
    except UnknownTopicError:
        raise NotFoundError(f"unknown topic {topic!r}") from None
    except UnknownGroupError:
        raise NotFoundError(f"unknown group {group!r} of topic {topic!r}") from None
    timeline = [
        e
        for e in store.lease_timeline_get(cluster, topic, limit=TIMELINE_LIMIT)
        if group is None or e.get("group") == group
    ]
    return {
        "leases": leases,
        "consumers": consumers,
        "unowned": sum(1 for lease in leases if not lease.owner),
        "timeline": timeline,
    }
