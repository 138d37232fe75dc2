"""A running pipeline's partition leases: what Java's housekeeper counts as a live group.

Java's ``StreamRetentionHousekeeper`` trims each partition below the lowest commit frontier
of the groups that hold a live lease there (``KeySpace.lease(topic, group, partition)``, the
owner's name with a TTL), and its all-groups-ack waits only for leased groups. A Spark
pipeline reads with XRANGE and moves its own consumer group when it commits: it takes no
lease as a consumer does, so Java would trim what it has not committed yet. While a
pipeline runs, :class:`LeaseKeeper` (started by the Spark source's driver,
:mod:`mqcore.spark.source`) holds the lease of every partition for the pipeline's group:

- taken through :class:`~mqcore.leases.LeaseManager` (the one lease writer) with an owner
  name that says what holds it (:func:`pipeline_owner`: ``spark-pipeline:<group>:...``);
  the group is the pipeline's own, so no mqcore consumer is fenced by its epochs;
- renewed by a daemon thread every third of the TTL; released on a clean stop; left to
  expire (the TTL) when the driver dies;
- on each lease it takes, the group's commit frontier on that partition is written as the
  group stands (``seed_frontier.lua``, in the deployment's encoding), so Java's lowest
  frontier counts the pipeline from its first lease; each commit then writes it
  (:meth:`mqcore.checkpoints.CheckpointStore.record_committed`).

What this cannot cover, and nothing on our side can: Java ignores a group without a live
lease. While a pipeline is stopped (or crashed, after the TTL), Java's frontier, length
and age trims and its all-groups-ack go on without it and may delete what it has not
read; the retention view (:mod:`mqcore.retention.view`) shows what Java's rules may delete
from each stopped group's backlog.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid

from mqcore.config import MQConfig, RedisClient
from mqcore.errors import MQError
from mqcore.leases import Lease, LeaseManager
from mqcore.scripts import call_script
from mqcore.topics import Topics

__all__ = [
    "DEFAULT_PIPELINE_LEASE_TTL_MS",
    "PIPELINE_OWNER_PREFIX",
    "LeaseKeeper",
    "pipeline_owner",
    "seed_frontier",
]

log = logging.getLogger("mqcore.pipeline")

DEFAULT_PIPELINE_LEASE_TTL_MS = 15_000  # as a consumer's: renewed every 5 s
PIPELINE_OWNER_PREFIX = "spark-pipeline"


def pipeline_owner(group: str) -> str:
    """A lease owner name that tells a pipeline's lease from a consumer's: the prefix, the
    group, the host and process, and a token unique to this keeper."""
    host = socket.gethostname() or "host"
    return f"{PIPELINE_OWNER_PREFIX}:{group}:{host}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def seed_frontier(
    client: RedisClient, config: MQConfig, *, topic: str, group: str, partition: int
) -> str | None:
    """Write ``group``'s commit frontier on one partition as the group stands now (its lowest
    pending id, else its last-delivered id; ``0-0`` when it is not on the stream yet), in the
    deployment's encoding; the id written, None when the partition does not exist."""
    keys = config.keys
    reply = call_script(
        client,
        "seed_frontier",
        [keys.partition(topic, partition), keys.commit_frontier(topic, partition)],
        [group, config.frontier_mode],
    )
    if not reply:
        return None
    return reply.decode() if isinstance(reply, bytes) else str(reply)


class LeaseKeeper:
    """Holds the lease of every partition of ``topic`` for ``group`` while it runs.

    :meth:`start` takes the free partitions at once and starts the renewing thread;
    :meth:`tick` is one round (take what is free, renew what is held); :meth:`stop`
    releases every lease held. A partition whose lease another owner holds (a run that
    died less than a TTL ago, or a second run of the same pipeline) is taken once it is
    free. Redis errors are logged and the next round tries again.
    """

    def __init__(
        self,
        config: MQConfig,
        *,
        topic: str,
        group: str,
        owner: str | None = None,
        ttl_ms: int = DEFAULT_PIPELINE_LEASE_TTL_MS,
    ) -> None:
        self.config = config
        self.topic = topic
        self.group = group
        self.owner = owner or pipeline_owner(group)
        self.client: RedisClient = config.client()
        self.leases = LeaseManager(
            self.client, config.keys, topic=topic, group=group, owner=self.owner, ttl_ms=ttl_ms
        )
        self.interval_s = ttl_ms / 3000
        self.held: dict[int, Lease] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Take the leases now and keep them (idempotent)."""
        with self._lock:
            if self._thread is not None:
                return
            self._stop.clear()
            thread = self._thread = threading.Thread(
                target=self._run, name=f"mqcore-lease-keeper-{self.group}", daemon=True
            )
        self.tick()
        thread.start()

    def tick(self) -> None:
        """One round: renew the leases held, take the free ones (and seed their frontier)."""
        with self._lock:
            try:
                count = Topics(self.config, self.client).partition_count(self.topic)
                for partition in range(count):
                    self._keep(partition)
            except MQError as exc:  # Redis unreachable, the topic deleted: the next round
                log.warning(
                    "pipeline %s: lease round on %s failed: %s", self.group, self.topic, exc
                )

    def _keep(self, partition: int) -> None:
        lease = self.held.get(partition)
        if lease is not None:
            if self.leases.renew(lease):
                return
            del self.held[partition]
            log.warning(
                "pipeline %s: lost the lease of %s/p%d (expired or taken); taking it again",
                self.group, self.topic, partition,
            )  # fmt: skip
        taken = self.leases.acquire(partition)
        if taken is None:
            return
        self.held[partition] = taken
        seed_frontier(
            self.client, self.config, topic=self.topic, group=self.group, partition=partition
        )

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.tick()

    def stop(self) -> None:
        """Stop renewing and release every lease held (idempotent)."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=max(self.interval_s * 3, 1.0))
        with self._lock:
            self._thread = None
            for lease in list(self.held.values()):
                try:
                    self.leases.release(lease)
                except MQError as exc:  # it expires after its TTL
                    log.warning("pipeline %s: lease release failed: %s", self.group, exc)
            self.held.clear()
            self.client.close()  # a later start reconnects
