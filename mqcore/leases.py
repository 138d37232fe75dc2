"""Partition leases with fencing epochs.

A lease is the Java key ``streaming:mq:lease:{t}:{g}:{i}`` holding the owning
consumer's name with a TTL, taken with ``SET NX PX`` (Java uses SETNX then
EXPIRE, which can leave a lease without TTL: acquiring gives such a lease a TTL, so
its partition frees up instead of starving). Every acquisition also INCRs the
partition's epoch key in the same script, so epochs strictly increase across
takeovers; the ack/retry/dead-letter scripts (:mod:`mqcore.acks`) compare the
epoch a consumer holds with the current one, and that the lease is free or still the
consumer's (a Java consumer takes a lease without raising the epoch), and refuse a
zombie's writes.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import redis

from mqcore.boundary import translate
from mqcore.clock import now_ms
from mqcore.codec import decode_text
from mqcore.config import RedisClient
from mqcore.errors import InvalidArgumentError
from mqcore.keys import KeySpace
from mqcore.scripts import call_script
from mqcore.validate import checked_name, validate_topic

__all__ = ["Lease", "LeaseManager"]

log = logging.getLogger("mqcore.consumer")


@dataclass(frozen=True)
class Lease:
    """A lease held by ``owner``; ``expires_at_ms`` is a conservative wall-clock bound."""

    topic: str
    group: str
    partition: int
    owner: str
    epoch: int
    expires_at_ms: int
    clean_handoff: bool = False  # the previous holder was mqcore and released it cleanly


class LeaseManager:
    """Acquire, renew and release the leases of one (topic, group) for one consumer."""

    def __init__(
        self,
        client: RedisClient,
        keys: KeySpace,
        *,
        topic: str,
        group: str,
        owner: str,
        ttl_ms: int = 15000,
    ) -> None:
        validate_topic(topic)
        checked_name("group", group)
        if not owner:
            raise InvalidArgumentError("a lease owner name is required")
        if ttl_ms < 100:
            raise InvalidArgumentError(f"lease TTL must be >= 100 ms, got {ttl_ms}")
        self.client = client
        self.keys = keys
        self.topic = topic
        self.group = group
        self.owner = owner
        self.ttl_ms = ttl_ms

    def _keys(self, partition: int) -> list[str]:
        return [
            self.keys.lease(self.topic, self.group, partition),
            self.keys.lease_epoch(self.topic, self.group, partition),
        ]

    def _marker(self, partition: int) -> str:
        return self.keys.lease_released(self.topic, self.group, partition)

    def acquire(self, partition: int) -> Lease | None:
        """Take the partition if it is free (or already ours); None when another holds it."""
        started = now_ms()
        reply = call_script(
            self.client,
            "acquire_lease",
            [*self._keys(partition), self._marker(partition)],
            [self.owner, str(self.ttl_ms)],
        )
        status = int(reply[0])
        if status == 3:
            log.warning(
                "lease %s/%s/p%d held by %s had no TTL (a holder that died between SETNX and "
                "EXPIRE): given %d ms",
                self.topic, self.group, partition, decode_text(reply[1]), self.ttl_ms,
            )  # fmt: skip
        if status in (0, 3):
            return None
        clean = status == 1 and len(reply) > 3 and int(reply[3]) == 1
        return Lease(
            self.topic, self.group, partition, self.owner, int(reply[1]), started + self.ttl_ms,
            clean_handoff=clean,
        )  # fmt: skip

    def renew(self, lease: Lease) -> bool:
        """Extend the TTL by ``ttl_ms`` from now; False when the lease was lost.

        Lost means expired, taken by another consumer, or its epoch moved on; the
        caller must stop processing the partition then.
        """
        reply = call_script(
            self.client,
            "renew_lease",
            self._keys(lease.partition),
            [lease.owner, str(self.ttl_ms), str(lease.epoch)],
        )
        return int(reply) == 1

    def release(self, lease: Lease) -> None:
        """Give the partition up (only if still ours at the same epoch)."""
        call_script(
            self.client,
            "release_lease",
            [*self._keys(lease.partition), self._marker(lease.partition)],
            [lease.owner, str(lease.epoch), str(self.ttl_ms)],
        )

    def current(self, partition: int) -> tuple[str | None, int, int]:
        """(owner or None, pttl ms or -2, epoch) as Redis has them now."""
        lease_key, epoch_key = self._keys(partition)
        try:
            pipe = self.client.pipeline(transaction=False)
            pipe.get(lease_key)
            pipe.pttl(lease_key)
            pipe.get(epoch_key)
            owner, pttl, epoch = pipe.execute()
        except redis.RedisError as exc:
            raise translate(exc, "lease read") from exc
        name = owner.decode("utf-8", errors="replace") if isinstance(owner, bytes) else owner
        return name, int(pttl), int(epoch or 0)
