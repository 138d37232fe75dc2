"""The leases page: live partition leases and consumers of a topic, and the lease history."""

from __future__ import annotations

from typing import Any

import msgspec

from dashboard import clusters
from dashboard.clusters import console_store
from dashboard.selectors.pages.params import mq_refusals
from dashboard.selectors.pages.snapshot import (
    pipeline_mark,
    snapshot_get,
    snapshot_topic_get,
    topic_visible_require,
)
from dashboard.selectors.pages.topic import known_group
from mqcore.models import ConsumerInfo, LeaseInfo, PipelineMark

__all__ = ["TIMELINE_LIMIT", "leases_get"]

TIMELINE_LIMIT = 200


def _pipeline_groups(cluster: str, topic: str) -> dict[str, PipelineMark]:
    """Group -> pipeline mark, for the groups of ``topic`` the collector recognised as
    moved by a pipeline's sink (they hold no leases by design)."""
    data = snapshot_topic_get(snapshot_get(cluster), topic)
    marks = ((g.group, pipeline_mark(g)) for g in (data.groups if data is not None else ()))
    return {group: mark for group, mark in marks if mark is not None}


def leases_get(cluster: str, topic: str, *, user: Any, group: str = "") -> dict[str, Any]:
    """Live leases and consumers of ``topic`` (optionally one group) plus the timeline.

    Each lease carries ``pipeline`` (the pipeline mark of its group, or None);
    ``unowned`` counts the partitions without owner of groups that are not
    pipeline groups, ``pipeline_partitions`` those of pipeline groups.
    The timeline is the newest ownership changes the collectors recorded (at most
    ``TIMELINE_LIMIT`` of the topic, then filtered to ``group``).
    """
    one = known_group(cluster, topic, group)[1] or None
    topic_visible_require(user, cluster, topic)
    admin = clusters.admin(cluster)
    with mq_refusals(topic, group=one):
        leases: list[LeaseInfo] = admin.leases(topic, one)
        consumers: list[ConsumerInfo] = admin.consumers(topic, one)
    pipelines = _pipeline_groups(cluster, topic)
    rows = [
        {
            **msgspec.structs.asdict(lease),
            "pipeline": msgspec.to_builtins(pipelines.get(lease.group)),
        }
        for lease in leases
    ]
    timeline = [
        e
        for e in console_store().lease_timeline_get(cluster, topic, limit=TIMELINE_LIMIT)
        if one is None or e.get("group") == one
    ]
    return {
        "topic": topic,
        "group": one,
        "leases": rows,
        "consumers": msgspec.to_builtins(consumers),
        "unowned": sum(1 for row in rows if not row["owner"] and not row["pipeline"]),
        "pipeline_partitions": sum(1 for row in rows if not row["owner"] and row["pipeline"]),
        "pipelines": msgspec.to_builtins(pipelines),
        "timeline": timeline,
    }
