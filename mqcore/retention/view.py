"""The retention view of one topic: per partition, every group's floor and what each rule
would delete next, with the unread entries each rule puts at risk.

A group's *floor* (:mod:`mqcore.retention.floor`) is its lowest pending id, or the id
after its last-delivered id: entries below it are read and acked by that group. A rule
puts a group at risk when it would delete entries at or above that group's floor.
mqcore's housekeeper never does (:mod:`mqcore.retention.trim`) except for groups an
operator opted out; a Java deployment's retention
(:class:`~mqcore.retention.policy.JavaRetention`) can.

Every read is bounded: entries are counted in ``XRANGE`` pages of :data:`PAGE` up to
:data:`COUNT_CAP` (beyond it a count is a lower bound, ``exact`` False).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import redis

from mqcore.clock import now_ms
from mqcore.codec import decode_text, id_tuple
from mqcore.config import RedisClient
from mqcore.keys import KeySpace
from mqcore.retention.floor import group_floor, id_after
from mqcore.retention.frontier import frontier_ids
from mqcore.retention.policy import JavaRetention, RetentionPolicy
from mqcore.topics import parse_partition_count

__all__ = ["COUNT_CAP", "GroupFloor", "PartitionRetention", "RuleEffect", "topic_retention"]

PAGE = 1000
COUNT_CAP = 2000  # entries counted per range; more reads as "at least"
_TOP = "+"


@dataclass
class GroupFloor:
    group: str
    last_delivered_id: str
    lag: int | None
    pending: int
    lowest_pending_id: str | None
    floor_id: str  # entries below are read and acked by this group
    unread: int  # entries at or above the floor
    unread_exact: bool
    frontier_id: str | None  # its commit frontier (Java's "last acked"), if written
    lease_live: bool
    ignored: bool  # opted out of mqcore's housekeeper by an operator


@dataclass
class RuleEffect:
    rule: str  # maxlen | age | consumed | java-maxlen | java-age | java-frontier
    by: str  # "mqcore housekeeper" or "java"
    detail: str
    would_delete: int
    exact: bool
    held_by: str | None = None  # mqcore: the group whose unread entries stop the rule
    held: int = 0
    at_risk: dict[str, int] = field(default_factory=dict)  # group -> unread entries lost


@dataclass
class PartitionRetention:
    partition: int
    length: int
    first_id: str | None
    last_id: str | None
    groups: list[GroupFloor]
    rules: list[RuleEffect]

    @property
    def at_risk(self) -> bool:
        return any(r.at_risk for r in self.rules)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "at_risk": self.at_risk}


def _lt(a: str, b: str) -> bool:
    return id_tuple(a) < id_tuple(b)


class _Counter:
    """Bounded counts of entries in id ranges of one stream."""

    def __init__(self, client: RedisClient, key: str) -> None:
        self.client, self.key = client, key

    def between(self, lo: str, hi: str | None) -> tuple[int, bool]:
        """Entries with lo <= id < hi (hi None: to the end), up to COUNT_CAP."""
        if hi is not None and not _lt(lo, hi):
            return 0, True
        counted, start = 0, lo
        while counted < COUNT_CAP:
            page = self.client.xrange(self.key, start, _TOP, count=PAGE)
            ids = [decode_text(e[0]) for e in page]
            if hi is not None:
                inside = [i for i in ids if _lt(i, hi)]
                counted += len(inside)
                if len(inside) < len(ids):
                    return counted, True
            else:
                counted += len(ids)
            if len(ids) < PAGE:
                return counted, True
            start = "(" + ids[-1]
        return counted, False


def _group_floors(
    client: RedisClient,
    keys: KeySpace,
    topic: str,
    partition: int,
    policy: RetentionPolicy,
    counter: _Counter,
) -> list[GroupFloor]:
    key = keys.partition(topic, partition)
    try:
        groups = client.xinfo_groups(key)
    except redis.ResponseError:  # no such stream (yet): no groups
        return []
    frontier = frontier_ids(client.hgetall(keys.commit_frontier(topic, partition)))
    pipe = client.pipeline(transaction=False)
    for g in groups:
        name = decode_text(g["name"])
        pipe.xpending(key, name)
        pipe.exists(keys.lease(topic, name, partition))
    replies = pipe.execute()
    out = []
    for i, g in enumerate(groups):
        name = decode_text(g["name"])
        summary, live = replies[2 * i], replies[2 * i + 1]
        last = decode_text(g["last-delivered-id"])
        low = decode_text(summary["min"]) if summary and summary.get("min") else None
        floor = group_floor(last, low)
        lag = g.get("lag")
        if lag is not None:  # unread = delivered but not all acked (from the floor) + the lag
            seen, exact = counter.between(floor, id_after(last))
            unread = int(lag) + seen
        else:  # Redis cannot tell the lag (a deleted entry in between): count, bounded
            unread, exact = counter.between(floor, None)
        out.append(
            GroupFloor(
                group=name,
                last_delivered_id=last,
                lag=lag,
                pending=int(g.get("pending") or 0),
                lowest_pending_id=low,
                floor_id=floor,
                unread=unread,
                unread_exact=exact,
                frontier_id=frontier.get(name),
                lease_live=bool(live),
                ignored=name in policy.ignore_groups,
            )
        )
    return out


def _risk(
    counter: _Counter, floors: list[GroupFloor], cut: str, only: set[str] | None = None
) -> dict[str, int]:
    """Unread entries each group would lose to a delete of everything below ``cut``."""
    out = {}
    for g in floors:
        if (only is None or g.group in only) and _lt(g.floor_id, cut):
            n, _exact = counter.between(g.floor_id, cut)
            if n:
                out[g.group] = n
    return out


def _maxlen_risk(floors: list[GroupFloor], n: int, only: set[str] | None = None) -> dict[str, int]:
    return {
        g.group: g.unread - n for g in floors if (only is None or g.group in only) and g.unread > n
    }


def _ours(
    policy: RetentionPolicy,
    floors: list[GroupFloor],
    length: int,
    counter: _Counter,
    now: int,
    first_id: str | None,
) -> list[RuleEffect]:
    kept = [g for g in floors if not g.ignored]
    ignored = {g.group for g in floors if g.ignored}
    low = min(kept, key=lambda g: id_tuple(g.floor_id)) if kept else None
    consumed, c_exact = (
        counter.between(first_id or "0-0", low.floor_id) if low is not None else (length, True)
    )
    by = "mqcore housekeeper"
    out = []

    def held(wanted: int, exact: bool, rule: str, detail: str, risk: dict[str, int]) -> None:
        would = min(wanted, consumed)
        out.append(
            RuleEffect(
                rule,
                by,
                detail,
                would,
                exact and c_exact,
                held_by=low.group if low is not None and would < wanted else None,
                held=max(0, wanted - would),
                at_risk=risk,
            )
        )

    if policy.maxlen is not None:
        n = policy.maxlen
        held(
            max(0, length - n),
            True,
            "maxlen",
            f"keep {n} entries",
            _maxlen_risk(floors, n, ignored),
        )
    if policy.max_age_ms is not None:
        cut = f"{max(0, now - policy.max_age_ms)}-0"
        wanted, exact = counter.between(first_id or "0-0", cut)
        held(
            wanted,
            exact,
            "age",
            f"delete entries older than {policy.max_age_ms // 1000} s",
            _risk(counter, floors, cut, ignored),
        )
    if policy.consumed:
        furthest = max((g.floor_id for g in kept), key=id_tuple, default=None)
        wanted, exact = counter.between(first_id or "0-0", furthest) if furthest else (0, True)
        held(wanted, exact, "consumed", "delete entries every group read and acked", {})
    return out


def _java(
    java: JavaRetention,
    floors: list[GroupFloor],
    length: int,
    counter: _Counter,
    now: int,
    first_id: str | None,
) -> list[RuleEffect]:
    out = []
    if java.maxlen is not None:
        n = java.maxlen
        out.append(
            RuleEffect(
                "java-maxlen",
                "java",
                f"producers and housekeeper keep {n} entries, read or not",
                max(0, length - n),
                True,
                at_risk=_maxlen_risk(floors, n),
            )
        )
    if java.retention_ms is not None:
        cut = f"{max(0, now - java.retention_ms)}-0"
        n, exact = counter.between(first_id or "0-0", cut)
        out.append(
            RuleEffect(
                "java-age",
                "java",
                f"entries older than {java.retention_ms // 1000} s",
                n,
                exact,
                at_risk=_risk(counter, floors, cut),
            )
        )
    if java.frontier_trim:
        leased = [g for g in floors if g.lease_live and g.frontier_id]
        if leased:
            low = min(leased, key=lambda g: id_tuple(g.frontier_id or "0-0"))
            cut = low.frontier_id or "0-0"
            n, exact = counter.between(first_id or "0-0", cut)
            detail = f"below the lowest commit frontier of the leased groups ({low.group}: {cut})"
            out.append(
                RuleEffect(
                    "java-frontier", "java", detail, n, exact, at_risk=_risk(counter, floors, cut)
                )
            )
        else:
            out.append(
                RuleEffect(
                    "java-frontier", "java", "no leased group has a commit frontier", 0, True
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
) -> list[PartitionRetention]:
    """The retention view of ``topic`` (every partition, or ``partitions``)."""
    now = now_ms() if at_ms is None else at_ms
    count = parse_partition_count(client.hget(keys.meta(topic), "partitionCount"))
    out = []
    for p in partitions if partitions is not None else range(count):
        key = keys.partition(topic, p)
        pipe = client.pipeline(transaction=False)
        pipe.xlen(key)
        pipe.xrange(key, "-", "+", count=1)
        pipe.xrevrange(key, "+", "-", count=1)
        length, first, last = pipe.execute()
        first_id = decode_text(first[0][0]) if first else None
        last_id = decode_text(last[0][0]) if last else None
        counter = _Counter(client, key)
        floors = _group_floors(client, keys, topic, p, policy, counter)
        rules = _ours(policy, floors, int(length), counter, now, first_id) if policy.enabled else []
        if java is not None:
            rules += _java(java, floors, int(length), counter, now, first_id)
        out.append(PartitionRetention(p, int(length), first_id, last_id, floors, rules))
    return out
