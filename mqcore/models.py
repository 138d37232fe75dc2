"""Plain data returned by mqcore's read APIs (admin, DLQ) and consumed by the console.

Everything here is a frozen dataclass of JSON-friendly values (the CLI prints
``dataclasses.asdict`` output), except the snapshot's parts: :class:`msgspec.Struct` types, the
one type of a snapshot from the collector's pass through the console store to the pages
(:func:`snapshot_encode`, :func:`snapshot_decode`), and of Admin's live reads of the same.
Field names match the CLI's ``--json`` contract and the console's stored JSON; add fields
freely, never rename.
Times are epoch milliseconds (``*_ms`` durations, ``*_at_ms`` instants).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from mqcore.codec.limits import Undecoded

__all__ = [
    "ClusterSnapshot",
    "ConsumerInfo",
    "DlqLetter",
    "DlqPage",
    "GroupLag",
    "LagExactness",
    "LeaseInfo",
    "MasterChange",
    "Message",
    "PartitionLag",
    "PendingEntry",
    "PendingPage",
    "PipelineMark",
    "PipelineSummary",
    "Redelivered",
    "ReplayRecord",
    "ReplayResult",
    "ReplicaRead",
    "Replication",
    "RetentionRisk",
    "RetryBacklog",
    "Status",
    "TopicInfo",
    "TopicMemory",
    "TopicSnapshot",
    "snapshot_decode",
    "snapshot_encode",
    "snapshot_encode_parts",
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


# --- the snapshot -----------------------------------------------------------------------------
# One type from the pass to the page: the collector's pass builds these structs, the console
# store keeps them as JSON (msgspec encodes them, field for field, in declaration order) and
# decodes them back, validated, for the pages; Admin's live reads return the same structs.
# Fields after the pass's own are the console's (statuses, totals, marks): their defaults
# until its collector sets them; UNSET ones (a mark only some groups get) are left out of
# the JSON while unset. ``gc=False``: none of them can take part in a reference cycle (they
# hold only scalars, lists and other such structs), so a pass's hundreds of thousands are
# never traversed by the cyclic collector.


class Status(StrEnum):
    """Health of a partition, group or topic, declared from best to worst.

    The declaration order is the severity: every ordering of statuses in the
    console (worst-of roll-ups, the overview's status sort and counts) derives
    from it through :attr:`severity` (the rules that set it: ``dashboard.status``).
    """

    OK = "OK"  # caught up, or catching up
    UNKNOWN = "UNKNOWN"  # Redis cannot tell the lag
    WARN = "WARN"  # moving, but lag grows at every sample
    REWIND = "REWIND"  # position went back and has not come back (moving, but redoing work)
    STALL = "STALL"  # position not moving while lag > 0
    STOP = "STOP"  # no consumer activity longer than the window while lag > 0
    ERR = "ERR"  # the collector cannot read it

    @property
    def severity(self) -> int:
        """0 for OK, growing with each worse status."""
        return _SEVERITY[self]


_SEVERITY = {status: rank for rank, status in enumerate(Status)}


class PartitionLag(msgspec.Struct, gc=False):
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
    oldest_pending_consumer: str | None = None  # the consumer holding that entry
    # the console's
    status: Status = Status.UNKNOWN
    status_reason: str = ""


class PipelineMark(msgspec.Struct, gc=False):
    """The pipeline whose sink moves a group, from its checkpoints (the console's)."""

    name: str
    last_checkpoint_ms: int | None  # last completed
    checkpoint_age_ms: int | None
    failed_checkpoints: int
    last_failed_ms: int | None
    health: str  # ok, no_checkpoint, stale, failing
    health_reason: str
    others: list[str] = msgspec.field(default_factory=list)  # other pipelines on the group


class PipelineSummary(msgspec.Struct, gc=False):
    """One pipeline's checkpoint summary (its meta hash, typed: :func:`mqcore.checkpoints.
    pipeline_summary`): counters, latest ids, the last completed end offsets.

    The fields in the order a pipeline's usual history (planned, then completed) writes
    them, then those it has not written yet: the JSON of the stored snapshot keeps the
    order the summary had as a dict."""

    pipeline: str
    topic: str = ""
    sink: str = ""
    group: str = ""
    triggered: int = 0
    in_progress: int = 0
    last_planned_id: int | None = None
    completed: int = 0
    last_completed_id: int | None = None
    last_completed_at_ms: int | None = None
    end_offsets: dict[str, Any] = msgspec.field(default_factory=dict)
    failed: int = 0
    restored: int = 0
    last_failed_id: int | None = None
    last_failed_at_ms: int | None = None
    last_restore_id: int | None = None
    last_restore_at_ms: int | None = None
    last_failure_reason: str = ""
    last_restore_outcome: str = ""
    last_restore_from_run: str = ""


class RetentionRisk(msgspec.Struct, gc=False):
    """Backlog entries a retention rule is about to take from a group (the console's)."""

    partitions: list[int]
    lost_at_least: int
    by: list[str]  # the rules
    first_loss_at_ms: int | None
    may: bool  # only may lose (nothing known lost)


class GroupLag(msgspec.Struct, gc=False):
    group: str
    lag: int | None
    lag_ms: int | None
    pending: int
    lag_exact: bool
    partitions: list[PartitionLag] = msgspec.field(default_factory=list)
    # the console's
    status: Status = Status.UNKNOWN
    status_reason: str = ""
    complete: float = 0.0  # share of partitions whose status window is full
    pipeline: PipelineMark | UnsetType = UNSET
    retention_risk: RetentionRisk | UnsetType = UNSET
    rewind_cause: str | UnsetType = UNSET  # "failover": its position went back across one


class LeaseInfo(msgspec.Struct, gc=False):
    group: str
    partition: int
    owner: str | None  # None: unowned
    ttl_ms: int | None
    epoch: int


class ConsumerInfo(msgspec.Struct, gc=False):
    group: str
    name: str
    pending: int
    idle_ms: int  # from XINFO CONSUMERS (min over partitions)
    last_seen_ms: int | None  # heartbeat age from mqcore consumers; None for non-mqcore
    partitions_held: list[int] = msgspec.field(default_factory=list)
    max_partitions: int | None = None


class RetryBacklog(msgspec.Struct, gc=False):
    count: int
    next_due_at_ms: int | None
    oldest_due_at_ms: int | None


class TopicMemory(msgspec.Struct, gc=False):
    """A topic's latest memory sample and the one it grew from (the console's)."""

    bytes: float
    at_ms: int
    from_bytes: float
    from_ms: int
    partitions: list[int | None]  # per partition stream; None: not measured


class TopicSnapshot(msgspec.Struct, gc=False):
    topic: str
    partitions: int
    length: int
    dlq_length: int
    retry: RetryBacklog
    groups: list[GroupLag]
    leases: list[LeaseInfo]
    consumers: list[ConsumerInfo]
    partition_lengths: list[int] = msgspec.field(default_factory=list)
    partition_last_ids: list[str | None] = msgspec.field(default_factory=list)  # None: not read
    error: str | None = None  # set when this topic could not be read
    # the console's: the worst group's status, totals over the groups, DLQ growth, memory
    status: Status = Status.UNKNOWN
    status_reason: str = ""
    lag: int | None = None  # None: a group's lag is unknown
    lag_ms: int | None = None
    pending: int = 0
    oldest_pending_ms: int | None = None
    dlq_growth: int | None = None  # DLQ length added over the growth window; None: no history
    memory: TopicMemory | None = None


class Replication(msgspec.Struct, gc=False):
    """The replication facts of the Redis a snapshot was read from (``INFO replication``
    and the server's run id, in the round trip the snapshot makes anyway)."""

    role: str  # master, slave
    run_id: str
    replid: str  # the replication history's id: a promoted replica starts a new one
    replid2: str  # the history it continued (a promoted replica: its old master's replid)
    offset: int  # master_repl_offset
    port: int | None = None  # tcp_port
    replicas: int = 0  # connected_slaves
    link: str = ""  # a replica's master_link_status (up, down)
    last_io_s: int | None = None  # a replica's master_last_io_seconds_ago


class ReplicaRead(msgspec.Struct, gc=False):
    """The replica a snapshot was read from (a cluster's ``read_from_replica`` or
    ``replica_url``) and how far behind its master it was."""

    run_id: str
    port: int | None
    offset: int  # the replica's replication offset
    lag_bytes: int | None  # the master's offset minus the replica's; None: not known
    link: str  # master_link_status
    last_io_s: int | None  # seconds since it last heard from its master


class Redelivered(msgspec.Struct, gc=False):
    """Pending entries a master change brought back (the console's)."""

    topic: str
    group: str
    partition: int
    count: int  # at least this many (COUNT-limited read)
    ids: list[str] = msgspec.field(default_factory=list)  # the first of them
    exact: bool = True  # False: the group had pending entries before; count is a lower bound


class MasterChange(msgspec.Struct, gc=False):
    """A change of the master the collector reads from, seen between two passes (the
    console's, held in the snapshot for a while after it)."""

    at_ms: int
    reason: str  # "promoted" (it continued the old one's history), "replaced" (another server)
    from_run_id: str
    to_run_id: str
    from_offset: int
    to_offset: int
    rewound: list[str] = msgspec.field(default_factory=list)  # "topic/group" went back
    redelivered: int = 0  # entries acked before the change and pending again after it
    redelivered_exact: bool = True
    redelivered_entries: list[Redelivered] = msgspec.field(default_factory=list)


class ClusterSnapshot(msgspec.Struct, gc=False):
    """Everything the console's pages need about one deployment, gathered in one pass."""

    taken_at_ms: int
    topics: list[TopicSnapshot]
    redis_run_id: str = ""
    elapsed_ms: float = 0.0
    commands: int = 0
    pipelines: list[PipelineSummary] = msgspec.field(default_factory=list)  # latest checkpoints
    cluster: str = ""  # the console's name of the deployment
    replication: Replication | UnsetType = UNSET  # not on Redis Cluster
    master_change: MasterChange | UnsetType = UNSET  # the console's: the latest, for a while
    replica: ReplicaRead | UnsetType = UNSET  # set when the snapshot was read from a replica


_SNAPSHOT_DECODER = msgspec.json.Decoder(ClusterSnapshot)
_ENCODER = msgspec.json.Encoder()


def snapshot_encode(snap: ClusterSnapshot) -> bytes:
    """The snapshot's JSON (the console store's value, the API's fields)."""
    return _ENCODER.encode(snap)


def snapshot_encode_parts(snap: ClusterSnapshot, per_part: int = 500) -> Iterator[bytes]:
    """:func:`snapshot_encode`'s bytes in parts made as they are asked for (their
    concatenation is the same bytes), ``per_part`` topics a part: a writer that sends each
    part as it comes never holds the whole text (52 MB at 50,000 partitions)."""
    shell = _ENCODER.encode(msgspec.structs.replace(snap, topics=[]))
    head, found, tail = shell.partition(b'"topics":[]')
    assert found, "topics follows taken_at_ms, an int: its place is always found"
    yield head + b'"topics":['
    topics = snap.topics
    for start in range(0, len(topics), per_part):
        body = _ENCODER.encode(topics[start : start + per_part])[1:-1]
        yield b"," + body if start else body
    yield b"]" + tail


def snapshot_decode(raw: bytes) -> ClusterSnapshot:
    """The snapshot of its JSON, validated: :class:`msgspec.ValidationError` (or
    :class:`msgspec.DecodeError`, both :class:`msgspec.MsgspecError`) when it is not one."""
    return _SNAPSHOT_DECODER.decode(raw)
