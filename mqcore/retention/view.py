"""The retention view of one topic: per partition, every group's floor and what each rule
deletes next - how many entries, when, and from which group's backlog.

A group's *floor* is its lowest pending id, or the id after its last-delivered id:
entries below it are read and acked by that group, entries at or above it are its
backlog (unread or pending). A rule puts a group at risk when it deletes entries of
that backlog. mqcore's housekeeper never does (:mod:`mqcore.retention.trim`) except
for groups an operator opted out; a Java deployment's retention
(:class:`~mqcore.retention.policy.JavaRetention`) can, and waits for no group without
a lease. The rules and their next deletions are :mod:`mqcore.retention.effects`.

Every read is bounded (:mod:`mqcore.retention.counting`): each floor splits its stream
into the entries below and at or above it, counted from both ends a page at a time
until one side ends, so a risk decision never rests on a capped count.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from mqcore.clock import now_ms
from mqcore.codec import decode_text, kryo, partition_count_from_meta, validate_id
from mqcore.config import RedisClient
from mqcore.errors import InvalidIdError
from mqcore.keys import KeySpace
from mqcore.retention.counting import COUNT_CAP, Counter
from mqcore.retention.effects import (
    FloorInfo,
    Partition,
    RuleEffect,
    Threat,
    java_effects,
    mqcore_effects,
)
from mqcore.retention.floor import partition_floors
from mqcore.retention.policy import JavaRetention, RetentionPolicy

__all__ = [
    "COUNT_CAP",
    "GroupFloor",
    "PartitionRetention",
    "RuleEffect",
    "Threat",
    "frontier_ids",
    "topic_retention",
]


@dataclass
class GroupFloor:
    group: str
    last_delivered_id: str
    lag: int | None
    pending: int
    lowest_pending_id: str | None
    floor_id: str  # entries below are read and acked by this group
    unread: int  # its backlog: entries at or above the floor, unread or pending
    unread_exact: bool
    frontier_id: str | None  # its commit frontier (Java's "last acked"), if written
    lease_live: bool
    ignored: bool  # opted out of mqcore's housekeeper by an operator


@dataclass
class PartitionRetention:
    partition: int
    length: int
    first_id: str | None
    last_id: str | None
    groups: list[GroupFloor]
    rules: list[RuleEffect]
    rate_per_s: float | None = None  # entries written per second lately

    @property
    def at_risk(self) -> bool:
        return any(r.at_risk for r in self.rules)

    @property
    def next_loss_at_ms(self) -> int | None:
        """When a rule first deletes an entry some group still needs (None: not foreseeable)."""
        times = [t.at_ms for r in self.rules for t in r.threats if t.at_ms is not None]
        return min(times, default=None)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "at_risk": self.at_risk, "next_loss_at_ms": self.next_loss_at_ms}


def _group_floors(
    client: RedisClient,
    keys: KeySpace,
    topic: str,
    partition: int,
    policy: RetentionPolicy,
    counter: Counter,
    length: int,
) -> list[GroupFloor]:
    floors = partition_floors(client, keys.partition(topic, partition))
    if not floors:
        return []
    frontier = frontier_ids(client.hgetall(keys.commit_frontier(topic, partition)))
    pipe = client.pipeline(transaction=False)
    for f in floors:
        pipe.exists(keys.lease(topic, f.group, partition))
    leased = pipe.execute()
    out = []
    for f, live in zip(floors, leased, strict=True):
        split = counter.split(f.floor_id, length)
        out.append(
            GroupFloor(
                group=f.group,
                last_delivered_id=f.last_delivered_id,
                lag=f.lag,
                pending=f.pending,
                lowest_pending_id=f.lowest_pending_id,
                floor_id=f.floor_id,
                unread=split.above,
                unread_exact=split.exact,
                frontier_id=frontier.get(f.group),
                lease_live=bool(live),
                ignored=f.group in policy.ignore_groups,
            )
        )
    return out


def topic_retention(
    client: RedisClient,
    keys: KeySpace,
    topic: str,
    policy: RetentionPolicy,
    java: JavaRetention | None = None,
    *,
    partitions: list[int] | None = None,
    at_ms: int | None = None,
    housekeep_interval_s: float | None = None,
) -> list[PartitionRetention]:
    """The retention view of ``topic`` (every partition, or ``partitions``).

    ``housekeep_interval_s``: how often mqcore's housekeeper runs (when its next deletion
    happens; None: only when run by hand).
    """
    now = now_ms() if at_ms is None else at_ms
    interval_ms = int(housekeep_interval_s * 1000) if housekeep_interval_s else None
    count = partition_count_from_meta(client.hget(keys.meta(topic), "partitionCount"))
    out = []
    for p in partitions if partitions is not None else range(count):
        key = keys.partition(topic, p)
        pipe = client.pipeline(transaction=False)
        pipe.xlen(key)
        pipe.xrange(key, "-", "+", count=1)
        pipe.xrevrange(key, "+", "-", count=1)
        length, first, last = pipe.execute()
        length = int(length)
        first_id = decode_text(first[0][0]) if first else None
        last_id = decode_text(last[0][0]) if last else None
        counter = Counter(client, key)
        groups = _group_floors(client, keys, topic, p, policy, counter, length)
        rate = counter.rate_per_ms(now) if length else None
        part = Partition(length, first_id, now, rate, counter)
        floors = [
            FloorInfo(g.group, g.floor_id, counter.split(g.floor_id, length), g.lease_live,
                      g.ignored)
            for g in groups
        ]  # fmt: skip
        rules = mqcore_effects(policy, floors, part, interval_ms)
        if java is not None:
            frontiers = {g.group: g.frontier_id for g in groups if g.frontier_id}
            rules += java_effects(java, floors, frontiers, part)
        per_s = None if rate is None else round(rate * 1000, 3)
        out.append(PartitionRetention(p, length, first_id, last_id, groups, rules, per_s))
    return out


# --- commit frontier hashes (KeySpace.commit_frontier): group -> the highest id it acked.
# Java writes them through Redisson's default codec (mqcore.codec.kryo), other writers
# plain text; a field or value that is neither, or a value that is not an id, is left out.
def _text(raw: Any) -> str:
    if isinstance(raw, bytes) and kryo.looks_kryo(raw):
        try:
            return str(kryo.decode(raw))
        except kryo.KryoError:
            pass
    return decode_text(raw)


def frontier_ids(raw: Mapping[Any, Any]) -> dict[str, str]:
    """Group name -> frontier id of an ``HGETALL`` reply (both encodings)."""
    out: dict[str, str] = {}
    for field, value in raw.items():
        try:
            out[_text(field)] = validate_id(_text(value))
        except InvalidIdError:
            continue
    return out
