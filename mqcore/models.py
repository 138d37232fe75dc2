"""Plain data returned by mqcore's read APIs (admin, DLQ) and consumed by the console.

Everything here is a frozen dataclass of JSON-friendly values, so the console can
store a snapshot as JSON and the CLI can print ``dataclasses.asdict`` output.
Field names match the CLI's ``--json`` contract; add fields freely, never rename.
Times are epoch milliseconds (``*_ms`` durations, ``*_at_ms`` instants).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from mqcore.codec.limits import Undecoded

__all__ = [
    "ClusterSnapshot",
    "ConsumerInfo",
    "DlqLetter",
    "DlqPage",
    "GroupLag",
    "LagExactness",
    "LeaseInfo",
    "Message",
    "PartitionLag",
    "PendingEntry",
    "PendingPage",
    "ReplayRecord",
    "ReplayResult",
    "RetryBacklog",
    "TopicInfo",
    "TopicSnapshot",
]


class LagExactness(StrEnum):
    EXACT = "exact"  # from XINFO GROUPS lag, or a complete count
    COUNTED = "counted"  # XINFO lag was NULL; counted with a bounded XRANGE that reached the end
    APPROXIMATE = "approximate"  # bounded count hit its cap: lag is at least this much
    UNKNOWN = "unknown"  # neither Redis nor a count could tell


@dataclass(frozen=True, slots=True)
class TopicInfo:
    topic: str
    partitions: int
    length: int  # sum of XLEN over partitions
    dlq_length: int
    groups: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class PartitionLag:
    partition: int
    last_delivered_id: str
    lag: int | None  # None only when exactness is UNKNOWN
    lag_ms: int | None  # age of the first undelivered entry; 0 when nothing is waiting
    pending: int
    lag_exact: bool
    exactness: LagExactness = LagExactness.EXACT
    lag_reason: str = ""  # why lag is not exact, shown to users
    oldest_pending_ms: int | None = None  # idle time of the oldest pending entry
    entries_read: int | None = None
    length: int = 0
    last_id: str | None = "0-0"  # last entry id of the partition; None: not read
    oldest_pending_id: str | None = None  # the group's lowest pending id (its retention floor)


@dataclass(frozen=True, slots=True)
class GroupLag:
    group: str
    lag: int | None
    lag_ms: int | None
    pending: int
    lag_exact: bool
    partitions: list[PartitionLag] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class PendingEntry:
    partition: int
    id: str
    consumer: str
    idle_ms: int
    deliveries: int


@dataclass(frozen=True, slots=True)
class PendingPage:
    entries: list[PendingEntry]
    scanned: int  # PEL entries read to answer
    total: int  # entries matching the filters (across all partitions)
    elapsed_ms: float
    complete: bool = True  # False when the scan stopped at its bound


@dataclass(frozen=True, slots=True)
class LeaseInfo:
    group: str
    partition: int
    owner: str | None  # None: unowned
    ttl_ms: int | None
    epoch: int


@dataclass(frozen=True, slots=True)
class ConsumerInfo:
    group: str
    name: str
    pending: int
    idle_ms: int  # from XINFO CONSUMERS (min over partitions)
    last_seen_ms: int | None  # heartbeat age from mqcore consumers; None for non-mqcore
    partitions_held: list[int] = field(default_factory=list)
    max_partitions: int | None = None


@dataclass(frozen=True, slots=True)
class RetryBacklog:
    count: int
    next_due_at_ms: int | None
    oldest_due_at_ms: int | None


@dataclass(frozen=True, slots=True)
class Message:
    """One partition entry as stored (payload decoded to text when possible)."""

    topic: str
    partition: int
    id: str
    payload: str  # text; undecodable bytes are kept in ``payload_bytes``
    payload_bytes: bytes | None
    key: str | None
    headers: dict[str, str]
    timestamp: str
    retry_count: int
    max_retries: int
    fields: dict[str, str] = field(default_factory=dict)  # every raw field, decoded leniently
    undecoded: Undecoded | None = None  # the payload, kept undecoded (too large, page budget)


@dataclass(frozen=True, slots=True)
class ReplayRecord:
    dlq_id: str
    new_id: str
    topic: str
    partition: int
    at_ms: int
    by: str
    forced: bool = False


@dataclass(slots=True)
class DlqLetter:
    """One dead letter. Not frozen, unlike the other models: pages build them 50 at a time
    in hot loops, and a frozen dataclass's ``__init__`` (one ``object.__setattr__`` per
    field) costs more than decoding the letter (1.8 against 0.3 us)."""

    id: str
    partition: int
    original_id: str
    retry_count: int
    max_retries: int
    failed_at: str
    timestamp: str
    key: str | None
    payload: str
    payload_bytes: bytes | None
    headers: dict[str, str]
    original_topic: str
    replays: list[ReplayRecord] = field(default_factory=list)
    undecoded: Undecoded | None = None  # the payload, kept undecoded (too large, page budget)


@dataclass(frozen=True, slots=True)
class DlqPage:
    letters: list[DlqLetter]
    next_cursor: str | None  # pass as ``before`` to get the next (older) page
    scanned: int
    complete: bool = True  # False when a filter scan stopped at its bound


@dataclass(frozen=True, slots=True)
class ReplayResult:
    replayed: bool
    new_id: str | None
    topic: str
    partition: int | None
    reason: str  # "replayed", "already-replayed", "forced", "missing", ...
    dlq_id: str = ""


@dataclass(frozen=True, slots=True)
class TopicSnapshot:
    topic: str
    partitions: int
    length: int
    dlq_length: int
    retry: RetryBacklog
    groups: list[GroupLag]
    leases: list[LeaseInfo]
    consumers: list[ConsumerInfo]
    partition_lengths: list[int] = field(default_factory=list)
    partition_last_ids: list[str | None] = field(default_factory=list)  # None: not read
    error: str | None = None  # set when this topic could not be read


@dataclass(frozen=True, slots=True)
class ClusterSnapshot:
    """Everything the console's pages need about one deployment, gathered in one pass."""

    taken_at_ms: int
    topics: list[TopicSnapshot]
    redis_run_id: str = ""
    elapsed_ms: float = 0.0
    commands: int = 0
    pipelines: list[dict[str, Any]] = field(default_factory=list)  # latest checkpoint per pipeline
