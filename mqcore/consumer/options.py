"""What a consumer is given and what it reports: handler outcomes, options, counters."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

from mqcore.acks import check_ack_policy
from mqcore.models import Message
from mqcore.retry import RetryPolicy

__all__ = ["ConsumerOptions", "ConsumerStats", "Handler", "Outcome"]


class Outcome(StrEnum):
    SUCCESS = "success"  # handled: ack
    RETRY = "retry"  # try again later (backoff), dead-letter after maxRetries
    FAIL = "fail"  # dead-letter now


Handler = Callable[[Message], Outcome | None]


@dataclass(frozen=True)
class ConsumerOptions:
    group: str = "default-group"
    name: str | None = None  # default: host-pid-random (unique per process)
    max_partitions: int | None = None
    lease_ttl_ms: int = 15000
    renew_interval_ms: int = 3000
    rebalance_interval_ms: int = 5000
    batch_size: int = 100
    block_ms: int = 1000
    claim_idle_ms: int = 300000
    # after a take-over from a holder whose acks are not fenced (a Java consumer holds
    # entries pending), its pending entries are claimed once idle this long (None: the lease
    # TTL), so a holder that stalled past its TTL (a GC pause) and acks late is not doubled;
    # an mqcore holder's are claimed at once (its late acks are refused by the epoch), and
    # this consumer's own pending entries are re-read at once
    takeover_grace_ms: int | None = None
    reclaim_interval_ms: int = 30000
    ack_batch: int = 100
    retry_policy: RetryPolicy = field(default_factory=RetryPolicy)
    start_id: str = "0"
    ack_delete: bool = False  # XDEL after ack: the same as ack_delete_policy="immediate"
    # Java's ack-delete policy: "none" (keep entries; retention trims them); "immediate"
    # and "all-groups-ack" XDEL an acked entry once no group on the stream, leased or not,
    # still needs it (mqcore.acks.ack)
    ack_delete_policy: str = "none"
    retry_move_interval_ms: int = 1000  # run the retry mover this often (0: never, as Java 1 s)
    # per-minute counts and handler times in Redis, sent with the acks (mqcore.consumer_metrics)
    publish_metrics: bool = True

    def __post_init__(self) -> None:
        check_ack_policy(self.ack_delete_policy)

    @property
    def grace_ms(self) -> int:
        """The take-over grace in force."""
        return self.lease_ttl_ms if self.takeover_grace_ms is None else self.takeover_grace_ms

    @property
    def ack_policy(self) -> str:
        """The ack-delete policy in force (``ack_delete`` means ``immediate``)."""
        return "immediate" if self.ack_delete else self.ack_delete_policy


@dataclass
class ConsumerStats:
    processed: int = 0  # handler calls
    acked: int = 0
    retried: int = 0
    dead: int = 0
    fenced: int = 0  # writes refused because another consumer took the partition over
    lost_by_retention: int = 0  # pending ids trimmed/deleted before they were handled
    reclaimed: int = 0  # entries claimed from other consumers (takeover or idle orphans)
    errors: int = 0  # Redis errors seen by workers and the control loop

    def __post_init__(self) -> None:
        self._lock = threading.Lock()

    def add(self, **counts: int) -> None:
        with self._lock:
            for name, value in counts.items():
                setattr(self, name, getattr(self, name) + value)
