"""Topics: create, grow, describe and delete, in the Java redis-streaming layout.

A topic is a registry member, a meta hash (``partitionCount``), a set of its
partition stream keys and P streams with their consumer groups. Creating is
one Lua script over the topic's own keys (one slot with hash tags), followed by
the registry SADD: a topic appears in the registry only once its streams and
groups exist, and every step is idempotent, so a failed create is simply
repeated. Partition counts only grow (as in Java: keys route by partition count).
Trimming is the housekeeper's (:func:`mqcore.retention.trim.trim_topic`: never past
the retention floor).

An operator's checked writes (the console's topic and group administration): a create
refused when the topic exists (``new=True``), a group created at latest, earliest or a
time and refused when it exists, a topic delete refused while any group has unread or
pending entries (:meth:`Topics.delete_unused`), and a group delete refused while it holds
a lease or pending entries, checked and done in one script a partition
(``delete_group.lua``; a forced one acks the pending entries in bounded chunks first);
each unless forced. :meth:`Topics.group_use` is what those checks read, for a preview.
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from mqcore.boundary import redis_errors
from mqcore.codec import decode_text, partition_count_from_meta
from mqcore.config import MQConfig, RedisClient
from mqcore.errors import (
    AlreadyExistsError,
    InUseError,
    InvalidArgumentError,
    UnknownGroupError,
    UnknownTopicError,
)
from mqcore.keys import KeySpace
from mqcore.models import TopicInfo
from mqcore.scripts import call_script
from mqcore.validate import checked_name, validate_topic

__all__ = [
    "DEFAULT_GROUP",
    "DLQ_GROUP",
    "GROUP_DELETE_CHUNK",
    "GROUP_STARTS",
    "MAX_PARTITIONS",
    "SET_SCAN_COUNT",
    "GroupDeletion",
    "GroupUse",
    "Topics",
    "group_start_id",
    "read_partition_count",
    "set_members",
]

# pending entries a forced group delete acks per call, and the most it destroys with the
# group (XGROUP DESTROY is O(them)); see delete_group
GROUP_DELETE_CHUNK = 500
SET_SCAN_COUNT = 1000  # members per SSCAN call: SMEMBERS of a 12,500-topic registry held Redis 5 ms

DEFAULT_GROUP = "default-group"
DLQ_GROUP = "dlq-group"
MAX_PARTITIONS = 4096  # one create script touches every partition: keep it bounded

_DELETE_BATCH = 500  # keys per UNLINK round when emptying the retry set / payload index
_TRIM_ROUNDS = 10_000
_START_ID_RE = re.compile(r"^(\$|\d{1,20}(-\d{1,20})?)$")
_MAX_SEQ = 2**64 - 1
GROUP_STARTS = ("latest", "earliest", "time")


def group_start_id(start: str, at_ms: int | None = None) -> str:
    """The ``XGROUP CREATE`` id of a group starting at ``latest`` (``$``: only entries added
    from now), ``earliest`` (``0``: every entry still in the partition) or ``time`` (the
    first entry at or after ``at_ms`` is its first: the id just before ``at_ms-0``)."""
    if start == "latest":
        return "$"
    if start == "earliest":
        return "0"
    if start != "time":
        raise InvalidArgumentError(f"a group starts at latest, earliest or time, not {start!r}")
    if isinstance(at_ms, bool) or not isinstance(at_ms, int) or at_ms < 0:
        raise InvalidArgumentError(f"a time start needs epoch milliseconds, got {at_ms!r}")
    return f"{at_ms - 1}-{_MAX_SEQ}" if at_ms > 0 else "0"


@dataclass(frozen=True)
class GroupUse:
    """A consumer group as a delete sees it, summed over the topic's partitions."""

    group: str
    partitions: int  # partitions it is on
    pending: int  # delivered, not acknowledged
    unread: int | None  # entries not yet delivered (None: Redis cannot tell on a partition)
    leased: int  # partitions whose lease key exists

    @property
    def waiting(self) -> bool:
        """Unread (or unknown) or pending entries: a topic delete would lose them."""
        return self.unread != 0 or self.pending > 0

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class GroupDeletion:
    """What a group delete found (and did: ``deleted``)."""

    group: str
    deleted: bool
    partitions: int
    leased: int
    pending: int

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def set_members(client: RedisClient, key: str) -> builtins.list[str]:
    """The decoded members of a set, sorted, read in SSCAN pages of :data:`SET_SCAN_COUNT`.

    A member added or removed during the scan may be missed or seen; every member present
    throughout is returned (once: duplicates are dropped).
    """
    return sorted({decode_text(m) for m in client.sscan_iter(key, count=SET_SCAN_COUNT)})


def read_partition_count(client: RedisClient, keys: KeySpace, topic: str, doing: str) -> int:
    """A registered topic's partition count (meta ``partitionCount``, missing or invalid means
    1, as Java reads it), else UnknownTopicError; ``doing`` names the read in a Redis error."""
    with redis_errors(doing):
        pipe = client.pipeline(transaction=False)
        pipe.sismember(keys.registry(), topic)
        pipe.hget(keys.meta(topic), "partitionCount")
        registered, raw = pipe.execute()
    if not registered:
        raise UnknownTopicError(f"unknown topic {topic!r}")
    return partition_count_from_meta(raw)


def _check_partitions(partitions: int) -> int:
    if isinstance(partitions, bool) or not isinstance(partitions, int):
        raise InvalidArgumentError(f"partitions must be an integer, got {partitions!r}")
    if not 1 <= partitions <= MAX_PARTITIONS:
        raise InvalidArgumentError(f"partitions must be 1..{MAX_PARTITIONS}, got {partitions}")
    return partitions


class Topics:
    """Topic administration for one deployment (thread-safe: holds only a client)."""

    def __init__(self, config: MQConfig, client: RedisClient | None = None) -> None:
        self.config = config
        self.keys = config.keys
        self.client = client if client is not None else config.client()

    # --- create / grow ------------------------------------------------------
    def create(
        self,
        topic: str,
        partitions: int = 1,
        *,
        groups: Iterable[str] = (DEFAULT_GROUP,),
        new: bool = False,
    ) -> TopicInfo:
        """Create ``topic`` with ``partitions`` partitions and ``groups`` (at id 0) on each.

        Idempotent for the same count; a larger count grows the topic; a smaller
        one raises :class:`InvalidArgumentError` (partition counts never shrink).
        ``new``: a registered topic raises :class:`AlreadyExistsError` instead.
        """
        validate_topic(topic)
        _check_partitions(partitions)
        group_list = [checked_name("group", g) for g in groups]
        if new and self.exists(topic):
            raise AlreadyExistsError(f"topic {topic!r} already exists")
        self._apply(topic, partitions, group_list, "0")
        with redis_errors(f"register topic {topic!r}"):
            self.client.sadd(self.keys.registry(), topic)
        return self.describe(topic)

    def grow(self, topic: str, partitions: int) -> TopicInfo:
        """Raise the partition count to ``partitions``; new partitions get the existing groups.

        Asking for fewer partitions than the topic has is a no-op (never shrinks).
        """
        _check_partitions(partitions)
        current = self.partition_count(topic)
        if partitions > current:
            self._apply(topic, partitions, [], "0")
        return self.describe(topic)

    def ensure_group(self, topic: str, group: str, *, start_id: str = "0") -> None:
        """Create ``group`` at ``start_id`` on every partition (idempotent)."""
        checked_name("group", group)
        if not isinstance(start_id, str) or not _START_ID_RE.fullmatch(start_id):
            raise InvalidArgumentError(f"invalid start id {start_id!r}")
        count = self.partition_count(topic)
        self._apply(topic, count, [group], start_id)

    def create_group(
        self, topic: str, group: str, *, start: str = "latest", at_ms: int | None = None
    ) -> None:
        """Create ``group`` on every partition, starting as :func:`group_start_id` says;
        :class:`AlreadyExistsError` when it is on some partition already."""
        checked_name("group", group)
        start_id = group_start_id(start, at_ms)
        count = self.partition_count(topic)
        if group in self.groups(topic):
            raise AlreadyExistsError(f"group {group!r} already exists on topic {topic!r}")
        self._apply(topic, count, [group], start_id)

    def _apply(self, topic: str, partitions: int, groups: list[str], start_id: str) -> int:
        keys = [self.keys.meta(topic), self.keys.partitions_set(topic)]
        keys += [self.keys.partition(topic, i) for i in range(partitions)]
        with redis_errors(f"create topic {topic!r}"):
            try:
                reply = call_script(
                    self.client, "create_topic", keys, [partitions, start_id, *groups]
                )
            except Exception as exc:
                message = str(exc)
                if "SHRINK" in message:
                    current = message.rsplit(" ", 1)[-1]
                    raise InvalidArgumentError(
                        f"topic {topic!r} has {current} partitions; partition counts never "
                        f"shrink (asked for {partitions})"
                    ) from None
                raise
        return int(reply[0])

    # --- reads --------------------------------------------------------------
    def exists(self, topic: str) -> bool:
        with redis_errors("topic exists"):
            return bool(self.client.sismember(self.keys.registry(), topic))

    def names(self) -> list[str]:
        """Registered topic names, sorted (the registry set, never SCAN of the keyspace)."""
        with redis_errors("list topics"):
            return set_members(self.client, self.keys.registry())

    def partition_count(self, topic: str) -> int:
        """The topic's partition count (meta ``partitionCount``; missing/invalid means 1)."""
        return read_partition_count(self.client, self.keys, topic, "partition count")

    def describe(self, topic: str) -> TopicInfo:
        infos = self._describe_many([topic], check=True)
        return infos[0]

    def list(self) -> builtins.list[TopicInfo]:
        """Every registered topic with lengths and groups (pipelined: three round trips)."""
        return self._describe_many(self.names(), check=False)

    def groups(self, topic: str) -> builtins.list[str]:
        """Union of the consumer groups over the topic's partitions, sorted."""
        _, replies = self._xinfo_groups(topic, "list groups")
        return sorted(_group_names(replies))

    def _xinfo_groups(self, topic: str, doing: str) -> tuple[int, builtins.list[Any]]:
        """The partition count and each partition's ``XINFO GROUPS`` reply (an error for a
        partition without a stream), in one pipelined round trip."""
        count = self.partition_count(topic)
        with redis_errors(doing):
            pipe = self.client.pipeline(transaction=False)
            for i in range(count):
                pipe.xinfo_groups(self.keys.partition(topic, i))
            return count, pipe.execute(raise_on_error=False)

    def _describe_many(
        self, topics: builtins.list[str], *, check: bool
    ) -> builtins.list[TopicInfo]:
        if not topics:
            return []
        with redis_errors("describe topics"):
            pipe = self.client.pipeline(transaction=False)
            for t in topics:
                pipe.sismember(self.keys.registry(), t)
                pipe.hget(self.keys.meta(t), "partitionCount")
            first = pipe.execute()
            counts: builtins.list[int] = []
            for i, t in enumerate(topics):
                if check and not first[2 * i]:
                    raise UnknownTopicError(f"unknown topic {t!r}")
                counts.append(partition_count_from_meta(first[2 * i + 1]))
            pipe = self.client.pipeline(transaction=False)
            for t, count in zip(topics, counts, strict=True):
                pipe.xlen(self.keys.dlq(t))
                for i in range(count):
                    pipe.xlen(self.keys.partition(t, i))
                    pipe.xinfo_groups(self.keys.partition(t, i))
            replies = pipe.execute(raise_on_error=False)
        infos: builtins.list[TopicInfo] = []
        pos = 0
        for t, count in zip(topics, counts, strict=True):
            dlq_len = replies[pos] if isinstance(replies[pos], int) else 0
            pos += 1
            length = 0
            group_replies = []
            for _ in range(count):
                if isinstance(replies[pos], int):
                    length += replies[pos]
                group_replies.append(replies[pos + 1])
                pos += 2
            infos.append(
                TopicInfo(
                    topic=t,
                    partitions=count,
                    length=length,
                    dlq_length=dlq_len,
                    groups=sorted(_group_names(group_replies)),
                )
            )
        return infos

    def group_use(self, topic: str) -> builtins.list[GroupUse]:
        """Each group of the topic's partitions: pending, unread and leased partitions (two
        pipelined round trips: ``XINFO GROUPS`` per partition, then the lease keys)."""
        count, replies = self._xinfo_groups(topic, "read group use")
        sums: dict[str, list[int | None]] = {}
        for reply in replies:
            for g in reply if isinstance(reply, list) else []:
                row = sums.setdefault(decode_text(g["name"]), [0, 0, 0])
                lag = g.get("lag")
                row[0] = (row[0] or 0) + 1
                row[1] = (row[1] or 0) + int(g.get("pending") or 0)
                row[2] = None if lag is None or row[2] is None else row[2] + int(lag)
        names = sorted(sums)
        with redis_errors("read group use"):
            pipe = self.client.pipeline(transaction=False)
            for name in names:
                for i in range(count):
                    pipe.exists(self.keys.lease(topic, name, i))
            leases = pipe.execute()
        return [
            GroupUse(
                group=name,
                partitions=int(sums[name][0] or 0),
                pending=int(sums[name][1] or 0),
                unread=sums[name][2],
                leased=sum(leases[n * count : (n + 1) * count]),
            )
            for n, name in enumerate(names)
        ]

    def delete_group(self, topic: str, group: str, *, force: bool = False) -> GroupDeletion:
        """Delete ``group`` from every partition with its leases and heartbeats:
        :class:`InUseError` (nothing written) while it holds a lease or pending entries,
        unless ``force``; :class:`UnknownGroupError` when it is on no partition.

        Bounded, a partition at a time: one script checks and deletes on a partition, so a
        consumer taking a lease meanwhile is seen (then :class:`InUseError` names the
        partitions already done). ``XGROUP DESTROY`` is O(the group's pending entries), so
        a forced delete first acks them :data:`GROUP_DELETE_CHUNK` a call
        (:meth:`drain_group_pending`). Every step is idempotent: a delete interrupted
        midway is simply repeated and goes on where the group still is."""
        checked_name("group", group)
        use = next((u for u in self.group_use(topic) if u.group == group), None)
        if use is None:
            raise UnknownGroupError(f"group {group!r} is not on topic {topic!r}")
        if (use.leased or use.pending) and not force:
            raise InUseError(
                f"group {group!r} holds {use.leased} leased partition(s) and {use.pending} "
                "pending entries: stop its consumers and let them finish, or force the delete"
            )
        for i in range(self.partition_count(topic)):
            self._delete_group_on(topic, group, i, force)
        return GroupDeletion(group, True, use.partitions, use.leased, use.pending)

    def _delete_group_on(self, topic: str, group: str, partition: int, force: bool) -> None:
        """``delete_group.lua`` on one partition, its pending entries drained first when
        forced and more than :data:`GROUP_DELETE_CHUNK` (again if consumers add more)."""
        ks = self.keys
        keys = [
            ks.partition(topic, partition),
            ks.lease(topic, group, partition),
            ks.lease_released(topic, group, partition),
            ks.consumers(topic, group),
        ]
        args = [group, "1" if force else "0", GROUP_DELETE_CHUNK]
        while True:
            with redis_errors(f"delete group {group!r}"):
                reply = call_script(self.client, "delete_group", keys, args)
            status, _, leased, pending = (int(x) for x in reply)
            if status == 1:
                return
            if status == 0:
                raise InUseError(
                    f"group {group!r} took {leased} lease(s) and {pending} pending entries on "
                    f"partition {partition} during the delete (gone from partitions before "
                    "it): stop its consumers and repeat the delete, or force it"
                )
            while self.drain_group_pending(topic, group, partition) == GROUP_DELETE_CHUNK:
                pass

    def drain_group_pending(
        self, topic: str, group: str, partition: int, count: int = GROUP_DELETE_CHUNK
    ) -> int:
        """Ack the oldest ``count`` (at most :data:`GROUP_DELETE_CHUNK`) pending entries of
        ``group`` on one partition, a forced group delete's step: returns how many (0 when
        none is pending or the group is not there)."""
        if not 0 < count <= GROUP_DELETE_CHUNK:
            raise InvalidArgumentError(f"count must be 1..{GROUP_DELETE_CHUNK}, got {count}")
        with redis_errors(f"drain group {group!r}"):
            key = self.keys.partition(topic, partition)
            return int(call_script(self.client, "drain_group_pending", [key], [group, count]))

    def delete_unused(self, topic: str, *, force: bool = False) -> builtins.list[GroupUse]:
        """:meth:`delete` refused (:class:`InUseError`, nothing written) while a group has
        unread or pending entries, unless ``force``. Returns the groups as they were.

        The check is a read before the delete, which is many rounds and cannot be one
        script: an entry produced between the two is deleted with the topic."""
        use = self.group_use(topic)
        waiting = [u for u in use if u.waiting]
        if waiting and not force:
            names = ", ".join(u.group for u in waiting[:5])
            raise InUseError(
                f"topic {topic!r} has unread or pending entries in group(s) {names}: "
                "force the delete to lose them"
            )
        self.delete(topic)
        return use

    # --- delete --------------------------------------------------------------
    def delete(self, topic: str) -> None:
        """Remove every key of ``topic`` (idempotent; unknown topics raise UnknownTopicError).

        The registry member goes first, so producers stop; big keys are UNLINKed
        (freed in the background) and the retry set and payload index are
        emptied in bounded batches. Per-entry ``acks`` keys (ack-delete policy
        ``all-groups-ack``) cannot be listed without SCAN and are left to expire.
        """
        count = self.partition_count(topic)
        group_names = set(self.groups(topic)) | {DEFAULT_GROUP, DLQ_GROUP}
        ks = self.keys
        with redis_errors(f"delete topic {topic!r}"):
            members = self.client.smembers(ks.partitions_set(topic))
            count = max(count, len(members))
            self.client.srem(ks.registry(), topic)
            self._drain_zset(ks.retry_zset(topic))
            self._drain_set(ks.payload_index(topic))
            pipe = self.client.pipeline(transaction=False)
            single = [
                ks.dlq(topic), ks.meta(topic), ks.partitions_set(topic), ks.retry_zset(topic),
                ks.retry_lock(topic), ks.dlq_replays(topic), ks.payload_index(topic),
            ]  # fmt: skip
            for i in range(count):
                single += [ks.partition(topic, i), ks.commit_frontier(topic, i)]
            for g in sorted(group_names):
                single.append(ks.consumers(topic, g))
                for i in range(count):
                    single += [ks.lease(topic, g, i), ks.lease_epoch(topic, g, i)]
            for key in single:
                pipe.unlink(key)
            pipe.execute()

    def _drain_zset(self, key: str) -> None:
        for _ in range(_TRIM_ROUNDS):
            members = self.client.zrange(key, 0, _DELETE_BATCH - 1)
            if not members:
                return
            pipe = self.client.pipeline(transaction=False)
            for m in members:
                pipe.unlink(m)
            pipe.zrem(key, *members)
            pipe.execute()

    def _drain_set(self, key: str) -> None:
        for _ in range(_TRIM_ROUNDS):
            members = self.client.spop(key, _DELETE_BATCH)
            if not members:
                return
            pipe = self.client.pipeline(transaction=False)
            for m in members:
                pipe.unlink(m)
            pipe.execute()


def _group_names(replies: Iterable[Any]) -> set[str]:
    names: set[str] = set()
    for reply in replies:
        if isinstance(reply, Exception) or not reply:
            continue
        for group in reply:
            name = group.get("name") if isinstance(group, dict) else None
            if name is not None:
                names.add(decode_text(name))
    return names
