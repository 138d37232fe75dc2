""":class:`Admin`: bounded read views and operator actions over one deployment.

The heavy reads are plain functions in the sibling modules (:mod:`.lag`,
:mod:`.pending`, :mod:`.calls`, :mod:`.shapes`); the snapshot is
:mod:`mqcore.snapshot`, imported when asked for (it does not import this package).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import redis

from mqcore.admin import position
from mqcore.admin.calls import Calls, pipeline_consumers, pipeline_lenient
from mqcore.admin.lag import group_lags
from mqcore.admin.pending import scan_pending
from mqcore.admin.position import check_partitions
from mqcore.admin.position_target import PositionPlan, PositionTarget
from mqcore.admin.shapes import message_of
from mqcore.boundary import redis_errors, translate
from mqcore.clock import now_ms
from mqcore.codec import (
    decode_fields,
    decode_text,
    parse_headers,
    validate_id,
)
from mqcore.config import MQConfig, RedisClient
from mqcore.errors import (
    InvalidArgumentError,
    UnknownGroupError,
    UnknownMessageError,
    UnknownPartitionError,
)
from mqcore.keys import KeySpace, validate_name
from mqcore.models import (
    ClusterSnapshot,
    ConsumerInfo,
    GroupLag,
    LeaseInfo,
    Message,
    PendingPage,
    RetryBacklog,
)
from mqcore.payloads import is_out_of_line, resolve_within, stored_payload_limit
from mqcore.snapshot.shapes import consumers_of, lease_of, retry_backlog_of
from mqcore.topics import read_partition_count, set_members
from mqcore.validate import validate_topic

__all__ = ["Admin"]


class Admin:
    """Bounded read views and operator actions over one deployment (see :mod:`mqcore.admin`)."""

    def __init__(self, config: MQConfig, client: RedisClient | None = None) -> None:
        self.config = config
        self.keys: KeySpace = config.keys
        self.client: RedisClient = client if client is not None else config.client()

    # --- topics --------------------------------------------------------------------------
    def topics(self) -> list[str]:
        """Registered topic names, sorted (registry set; never SCAN of the keyspace)."""
        with redis_errors("list topics"):
            return set_members(self.client, self.keys.registry())

    def partition_count(self, topic: str) -> int:
        """Partition count of a registered topic, or UnknownTopicError."""
        validate_topic(topic)
        return read_partition_count(self.client, self.keys, topic, f"read topic {topic}")

    def _check_partition(self, topic: str, partition: int) -> int:
        count = self.partition_count(topic)
        if not isinstance(partition, int) or not 0 <= partition < count:
            raise UnknownPartitionError(
                f"topic {topic!r} has partitions 0..{count - 1}, not {partition!r}"
            )
        return count

    def groups(self, topic: str, partitions: int | None = None) -> list[str]:
        """Consumer groups present on any partition of the topic."""
        count = partitions if partitions is not None else self.partition_count(topic)
        replies = pipeline_lenient(
            self.client, [("xinfo_groups", (self.keys.partition(topic, p),)) for p in range(count)]
        )
        names: set[str] = set()
        for reply in replies:
            if isinstance(reply, list):
                names.update(decode_text(g["name"]) for g in reply)
        return sorted(names)

    # --- lag ------------------------------------------------------------------------------
    def lag(self, topic: str, group: str | None = None) -> list[GroupLag]:
        """Lag of every group (or one) per partition, with totals per group.

        ``lag`` comes from ``XINFO GROUPS``; when Redis reports NULL it is counted
        with bounded ``XRANGE`` pages (at most ``mqcore.lag.LAG_COUNT_CAP`` entries) and marked
        COUNTED (exact) or APPROXIMATE (a lower bound). ``lag_ms`` is the age of the
        first undelivered entry; ``oldest_pending_ms`` the idle time of the lowest
        pending id (``XPENDING - + 1``).
        """
        if group is not None:
            validate_name("group", group)
        count = self.partition_count(topic)
        return group_lags(self.client, self.keys, topic, count, group)

    # --- pending ----------------------------------------------------------------------------
    def pending(
        self,
        topic: str,
        group: str,
        *,
        sort: str = "idle",
        order: str = "desc",
        limit: int = 50,
        offset: int = 0,
        consumer: str | None = None,
        partition: int | None = None,
        min_idle_ms: int = 0,
        min_deliveries: int = 0,
        max_scan: int = 2_000_000,
    ) -> PendingPage:
        """Pending entries of a group across partitions, sorted, filtered, paged.

        Paged ``XPENDING key group (last + 1000`` per partition (one page of every
        partition per round trip), keeping a bounded heap of the best
        ``offset + limit``; never the ``IDLE`` option. ``scanned`` says how many
        PEL entries were read; ``complete`` is False when ``max_scan`` stopped it.
        """
        if sort not in ("idle", "count"):
            raise InvalidArgumentError(f"sort must be 'idle' or 'count', not {sort!r}")
        if order not in ("asc", "desc"):
            raise InvalidArgumentError(f"order must be 'asc' or 'desc', not {order!r}")
        if limit < 1 or offset < 0 or max_scan < 1 or min_idle_ms < 0 or min_deliveries < 0:
            raise InvalidArgumentError("limit and max_scan must be >= 1, offsets and minimums >= 0")
        validate_name("group", group)
        if consumer is not None and not consumer:
            raise InvalidArgumentError("consumer filter must not be empty")
        count = self.partition_count(topic)
        if partition is not None and not 0 <= partition < count:
            raise UnknownPartitionError(f"topic {topic!r} has partitions 0..{count - 1}")
        parts = [partition] if partition is not None else list(range(count))
        return scan_pending(
            self.client,
            self.keys,
            topic,
            group,
            parts,
            self.groups,
            sort=sort,
            order=order,
            limit=limit,
            offset=offset,
            consumer=consumer,
            min_idle_ms=min_idle_ms,
            min_deliveries=min_deliveries,
            max_scan=max_scan,
        )

    # --- leases and consumers ---------------------------------------------------------------
    def leases(self, topic: str, group: str | None = None) -> list[LeaseInfo]:
        """Partition -> owner, time left and fencing epoch, per group (one pipeline)."""
        count = self.partition_count(topic)
        groups = [validate_name("group", group)] if group else self.groups(topic, count)
        calls: Calls = []
        for g in groups:
            for p in range(count):
                lease = self.keys.lease(topic, g, p)
                calls.append(("get", (lease,)))
                calls.append(("pttl", (lease,)))
                calls.append(("get", (self.keys.lease_epoch(topic, g, p),)))
        replies = pipeline_lenient(self.client, calls)
        out: list[LeaseInfo] = []
        i = 0
        for g in groups:
            for p in range(count):
                owner, ttl, epoch = replies[i : i + 3]
                i += 3
                out.append(lease_of(g, p, owner, ttl, epoch))
        return out

    def consumers(self, topic: str, group: str | None = None) -> list[ConsumerInfo]:
        """Consumers per group: XINFO CONSUMERS over partitions joined with mqcore heartbeats."""
        count = self.partition_count(topic)
        groups = [validate_name("group", group)] if group else self.groups(topic, count)
        calls: Calls = []
        for g in groups:
            calls.append(("hgetall", (self.keys.consumers(topic, g),)))
            calls.extend(
                ("xinfo_consumers", (self.keys.partition(topic, p), g)) for p in range(count)
            )
        replies = pipeline_consumers(self.client, calls)
        now = now_ms()
        out: list[ConsumerInfo] = []
        i = 0
        for g in groups:
            beats, per_p = replies[i], replies[i + 1 : i + 1 + count]
            i += 1 + count
            stats: dict[str, dict[str, int]] = {}
            for reply in per_p:
                for c in reply or []:
                    s = stats.setdefault(decode_text(c["name"]), {"pending": 0, "idle": -1})
                    s["pending"] += int(c.get("pending") or 0)
                    idle = int(c.get("idle") or 0)
                    s["idle"] = idle if s["idle"] < 0 else min(s["idle"], idle)
            out.extend(consumers_of(g, stats, beats or {}, now))
        return out

    # --- retry backlog ------------------------------------------------------------------------
    def retry_backlog(self, topic: str) -> RetryBacklog:
        """Count of scheduled retries, the next due in the future, and the oldest due overall."""
        validate_topic(topic)
        now = now_ms()
        zset = self.keys.retry_zset(topic)
        with redis_errors(f"read retry backlog of {topic}"):
            pipe = self.client.pipeline(transaction=False)
            pipe.zcard(zset)
            pipe.zrange(zset, 0, 0, withscores=True)
            pipe.zrangebyscore(zset, now, "+inf", start=0, num=1, withscores=True)
            card, oldest, nxt = pipe.execute()
        return retry_backlog_of(card, oldest, nxt)

    # --- one message and operator actions ---------------------------------------------------
    def message(self, topic: str, partition: int, entry_id: str) -> Message:
        """One partition entry as stored; out-of-line payloads are resolved when present."""
        validate_id(entry_id)
        self._check_partition(topic, partition)
        key = self.keys.partition(topic, partition)
        with redis_errors(f"read message {entry_id}"):
            found = self.client.xrange(key, entry_id, entry_id, 1)
        if not found:
            raise UnknownMessageError(f"no entry {entry_id} in {topic} partition {partition}")
        fields = decode_fields(found[0][1])
        budget = self.config.decode_budget()
        headers = parse_headers(fields.get("headers"))
        raw = fields.get("payload")
        undecoded = None
        if is_out_of_line(headers, raw):
            raw, headers, undecoded = resolve_within(
                self.client, headers, prefix=self.keys.payload_prefix(topic, partition),
                max_bytes=stored_payload_limit(self.config.max_payload_bytes), inline=raw,
                budget=budget,
            )  # fmt: skip
        entry_id = decode_text(found[0][0])
        return message_of(
            topic, partition, entry_id, fields, headers, raw, budget=budget, undecoded=undecoded
        )

    def claim(
        self, topic: str, group: str, partition: int, ids: Sequence[str], consumer: str
    ) -> list[str]:
        """Operator claim of pending ids to ``consumer`` (XCLAIM JUSTID); returns claimed ids."""
        validate_name("group", group)
        if not consumer or not isinstance(consumer, str):
            raise InvalidArgumentError("consumer name must be a non-empty string")
        ids = [validate_id(i) for i in ids]
        self._check_partition(topic, partition)
        if not ids:
            return []
        key = self.keys.partition(topic, partition)
        try:
            claimed = self.client.xclaim(key, group, consumer, 0, ids, justid=True)
        except redis.ResponseError as exc:
            if "NOGROUP" in str(exc):
                raise UnknownGroupError(f"group {group!r} does not exist on {topic}") from exc
            raise translate(exc, "claim") from exc
        except redis.RedisError as exc:
            with redis_errors("claim"):
                raise exc
        return [decode_text(c) for c in claimed]

    def move_to_dlq(
        self, topic: str, group: str, partition: int, ids: Sequence[str], *, reason: str
    ) -> list[str]:
        """Dead-letter pending ids atomically (DLQ add + XACK per entry); returns the moved ids.

        Ids not pending in the group are skipped; an id trimmed while pending is
        acked (it cannot be delivered any more) but not reported as moved.
        """
        from mqcore.acks import PendingEntry, dead_letter

        validate_name("group", group)
        ids = [validate_id(i) for i in ids]
        self._check_partition(topic, partition)
        moved: list[str] = []
        for entry_id in ids:
            try:
                entry = PendingEntry(topic, group, partition, entry_id, epoch=None)
                result = dead_letter(
                    self.client, self.keys, entry, reason=reason, encoding=self.config.encoding
                )
            except UnknownMessageError:
                continue  # not pending in this group: nothing to move
            if result:
                moved.append(entry_id)
        return moved

    # --- group position -------------------------------------------------------------------
    def plan_position(
        self, topic: str, group: str, target: PositionTarget, partitions: list[int] | None = None
    ) -> PositionPlan:
        """Dry run of a group position move on ``partitions`` (all when None): nothing written.
        ``pipelines`` names the pipelines that move the group (a move needs ``force``)."""
        return self._position(topic, group, target, partitions, apply=False)

    def set_position(
        self,
        topic: str,
        group: str,
        target: PositionTarget,
        partitions: list[int] | None = None,
        *,
        force: bool = False,
    ) -> PositionPlan:
        """Move the group on every partition or none (up to ``position.CHUNK`` at once), with
        an exact ENTRIESREAD, lowering each commit frontier to the group's new floor; see
        :mod:`mqcore.admin.position`. Pending entries are not touched. A group a pipeline
        moves is refused (:class:`~mqcore.errors.PipelineGroupError`) unless ``force``."""
        return self._position(topic, group, target, partitions, apply=True, force=force)

    def _position(
        self,
        topic: str,
        group: str,
        target: PositionTarget,
        partitions: list[int] | None,
        *,
        apply: bool,
        force: bool = False,
    ) -> PositionPlan:
        """The group's moves on the checked ``partitions`` (all when None: a partition the
        group is not on is skipped), planned or, with ``apply``, made."""
        validate_name("group", group)
        parts = check_partitions(topic, self.partition_count(topic), partitions)
        skip_missing = partitions is None
        if apply:
            position.check_pipelines(
                position.pipelines_of(self.config, self.client, topic, group), group, force=force
            )
            how = position.MoveHow(target, self.config.frontier_mode, skip_missing=skip_missing)
            moves = position.move_partitions(self.client, self.keys, topic, group, parts, how)
        else:
            how = position.MoveHow(target, "", skip_missing=skip_missing)
            moves = position.plan_moves(self.client, self.keys, topic, group, parts, how)
        if not moves:
            raise UnknownGroupError(f"group {group!r} does not exist on topic {topic!r}")
        pipelines = tuple(position.pipelines_of(self.config, self.client, topic, group))
        return PositionPlan(
            topic, group, target.as_dict(), moves, pipelines=pipelines, applied=apply
        )

    # --- snapshot ---------------------------------------------------------------------------
    def snapshot(
        self, *, topics: Iterable[str] | None = None, batch: int = 500, last_ids: bool = True
    ) -> ClusterSnapshot:
        """Everything the console shows, for every registered topic, in pipelined batches.

        See :mod:`mqcore.snapshot` for the command plan and its cost bounds.
        ``last_ids=False`` spares a read per partition that no group's position tells the
        last id of (a partition's ``last_id`` is then None): what a collector that does not
        show them asks for.
        """
        from mqcore.snapshot import take_snapshot

        return take_snapshot(self, topics=topics, batch=batch, last_ids=last_ids)
