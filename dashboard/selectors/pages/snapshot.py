"""The collectors' latest snapshot of a cluster, as the read pages consume it.

The snapshot is :class:`mqcore.models.ClusterSnapshot`, validated when the console store
decodes it: a stored value that is not one is refused there, once per version, and the
pages say "collector data unreadable" (:func:`snapshot_read`) instead of reading its parts.
"""

from __future__ import annotations

from typing import Any

from dashboard.clusters import cluster_config, console_store
from dashboard.permissions import topic_visible
from dashboard.selectors.pages.params import NotFoundError
from dashboard.store.console import SnapshotRead
from mqcore.clock import now_ms
from mqcore.models import ClusterSnapshot, GroupLag, PipelineMark, TopicSnapshot

__all__ = [
    "SnapshotRead",
    "now_ms",
    "pipeline_mark",
    "snapshot_age_ms",
    "snapshot_get",
    "snapshot_read",
    "snapshot_topic_get",
    "topic_visible_require",
]


def snapshot_read(cluster: str) -> SnapshotRead:
    """The latest stored snapshot of ``cluster`` (None before the first pass), or why the
    stored value was refused.

    Raises UnknownClusterError (404) for a cluster that is not configured.
    """
    cluster_config(cluster)
    return console_store().snapshot_read(cluster)


def snapshot_get(cluster: str) -> ClusterSnapshot | None:
    """The latest snapshot of ``cluster``; None before the first pass or when unreadable."""
    return snapshot_read(cluster).snapshot


def snapshot_age_ms(snapshot: ClusterSnapshot | None) -> int | None:
    """How long ago ``snapshot`` was taken; None without a snapshot."""
    return None if snapshot is None else max(0, now_ms() - snapshot.taken_at_ms)


def snapshot_topic_get(snap: ClusterSnapshot | None, topic: str) -> TopicSnapshot | None:
    """``topic``'s entry in ``snap`` (shared: do not change it); None when it lacks it."""
    for t in snap.topics if snap is not None else ():
        if t.topic == topic:
            return t
    return None


def pipeline_mark(group: GroupLag) -> PipelineMark | None:
    """The collector's pipeline mark of a group (dashboard.collectors.derive), or None."""
    mark = group.pipeline
    return mark if isinstance(mark, PipelineMark) else None


def topic_visible_require(user: Any, cluster: str, topic: str) -> None:
    """NotFoundError when ``user`` may not see ``topic``: exactly like a missing topic."""
    if not topic_visible(user, cluster, topic):
        raise NotFoundError(f"unknown topic {topic!r}")
