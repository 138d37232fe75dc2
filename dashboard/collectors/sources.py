"""The collector classes: each reads one kind of state of a cluster with ``fetch()``."""

from __future__ import annotations

from typing import Any

from dashboard import clusters
from mqcore.admin.interop import java_kryo_seen
from mqcore.admin.partitions import topic_memory
from mqcore.admin.redis_health import redis_health
from mqcore.models import ClusterSnapshot
from mqcore.retention.counting import Counter

__all__ = [
    "BacklogCounter",
    "CheckpointCollector",
    "JavaProbe",
    "RedisHealthProbe",
    "SnapshotCollector",
    "TopicMemoryProbe",
]


class SnapshotCollector:
    """Topics, groups, partitions, leases, consumers, retry, DLQ of a cluster (mqcore.admin).

    Without the partitions' last ids that no group's position tells (a read per partition
    that nothing the pass computes needs): the topic API reads those of its one topic
    live (:func:`dashboard.selectors.pages.topic.fill_last_ids`).
    """

    def __init__(self, cluster: str, batch: int = 500) -> None:
        self.cluster = cluster
        self.batch = batch

    def fetch(self) -> ClusterSnapshot:
        return clusters.admin(self.cluster).snapshot(batch=self.batch, last_ids=False)

    def fetch_dict(self) -> dict[str, Any]:
        """:meth:`fetch` as the plain dict the console stores (no dataclasses in between)."""
        return clusters.admin(self.cluster).snapshot_dict(batch=self.batch, last_ids=False)


class CheckpointCollector:
    """Latest checkpoint summary per pipeline (mqcore.checkpoints), when pipelines exist."""

    def __init__(self, cluster: str) -> None:
        self.cluster = cluster

    def fetch(self) -> list[dict[str, Any]]:
        store = clusters.checkpoints(self.cluster)
        return [dict(s) for s in store.summaries()]


class JavaProbe:
    """Whether a Java service writes Kryo-encoded letters or frontiers (mqcore.admin.interop),
    and the frontier encoding this cluster is configured with."""

    def __init__(self, cluster: str) -> None:
        self.cluster = cluster

    def fetch(self, topics: list[str]) -> dict[str, Any]:
        admin = clusters.admin(self.cluster)
        seen = java_kryo_seen(admin.client, admin.keys, topics)
        return {**seen, "configured": admin.config.encoding}


class BacklogCounter:
    """Bounded counts of a partition stream's entries (the retention_risk alert's backlogs
    that the snapshot cannot tell): ``BacklogCounter(cluster)(topic, partition)``."""

    def __init__(self, cluster: str) -> None:
        self.cluster = cluster

    def __call__(self, topic: str, partition: int) -> Counter:
        admin = clusters.admin(self.cluster)
        return Counter(admin.client, admin.keys.partition(topic, partition))


class RedisHealthProbe:
    """Memory, evictions, persistence, clients and the slow log of the cluster's Redis."""

    def __init__(self, cluster: str) -> None:
        self.cluster = cluster

    def fetch(self) -> dict[str, Any]:
        return redis_health(clusters.admin(self.cluster).client)


class TopicMemoryProbe:
    """Bytes of each partition stream of a topic (``MEMORY USAGE ... SAMPLES n``)."""

    def __init__(self, cluster: str, samples: int) -> None:
        self.cluster = cluster
        self.samples = samples

    def fetch(self, topics: list[tuple[str, int]]) -> dict[str, list[int | None]]:
        """Topic -> bytes per partition stream of ``topics`` (name, partitions), one pipeline."""
        admin = clusters.admin(self.cluster)
        return topic_memory(admin.client, admin.keys, topics, samples=self.samples)
