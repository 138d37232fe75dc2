"""Entries a retention rule is about to delete from a group's backlog, seen from the snapshot.

A group's backlog on a partition is every entry at or above its *floor*: its oldest
pending entry (the snapshot's ``oldest_pending_id``, from the ``XPENDING - + 1`` the pass
reads anyway), or what follows its last-delivered entry. Rules that do not wait for a
group reach into it: the Java deployment's length and age rules (for every group), its
commit-frontier trim (for a group without a lease: a stopped consumer group, a pipeline
that is not running, below a leased group's position), and mqcore's housekeeper rules for
a group an operator opted out.

The alert fires *before* a loss: when a rule deletes backlog entries now, or will within
its last tenth (:data:`HEADROOM`: a length rule of N entries when fewer than N/10 writes
are left before the floor entry goes; an age rule of R when the floor entry is older than
R - R/10). A backlog is known from the snapshot when nothing is pending (the lag); with
entries pending it lies between lag + pending and the partition's length, and only when
that range straddles the bound are the entries between the floor and the last-delivered
one counted (:class:`~mqcore.retention.counting.Counter`, at most :data:`PROBE_ENTRIES`
entries a pass; past that budget the alert says the rule *may* delete).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from mqcore.codec import id_tuple
from mqcore.models import ClusterSnapshot, PartitionLag, RetentionRisk, TopicSnapshot
from mqcore.retention import JavaRetention, RetentionPolicy
from mqcore.retention.counting import Counter, id_ms, older
from mqcore.retention.floor import group_floor, id_after

__all__ = ["HEADROOM", "PROBE_ENTRIES", "retention_risks"]

HEADROOM = 10  # a rule is near when a tenth of its bound is left
PROBE_ENTRIES = 20_000  # entries a pass may count to settle a backlog's size

CounterFor = Callable[[str, int], Counter]


@dataclass
class _Rule:
    by: str
    maxlen: int | None = None
    age_ms: int | None = None
    below_others: bool = False  # mqcore's consumed rule: down to the other groups' floors
    frontier: bool = False  # Java's frontier trim: below the leased groups' positions


@dataclass
class _Row:
    """One group on one partition."""

    partition: int
    floor: str
    lag: int
    pending: int
    length: int
    exact: bool  # the backlog is the lag, known
    first_ms: int | None  # time of its floor entry (None: no backlog)
    last: str
    leased: bool

    @property
    def low(self) -> int:
        return self.lag + self.pending


@dataclass
class _Risk:
    lost: int = 0
    first_at: int | None = None
    may: bool = False
    by: set[str] = field(default_factory=set)

    def hit(self, by: str, lost: int, at: int, may: bool = False) -> None:
        self.lost += lost
        self.first_at = at if self.first_at is None else min(self.first_at, at)
        self.may = self.may or may
        self.by.add(by)

    def merge(self, other: _Risk) -> None:
        self.lost += other.lost
        self.may = self.may or other.may
        self.by |= other.by
        if other.first_at is not None:
            self.first_at = min(self.first_at or other.first_at, other.first_at)


class _Budget:
    def __init__(self, counter_for: CounterFor | None, entries: int) -> None:
        self.counter_for, self.left = counter_for, entries

    def backlog(self, topic: str, row: _Row) -> tuple[int, bool] | None:
        """The backlog counted (at most the partition's length, at most the budget left):
        (entries, exact); None without a client or budget."""
        if self.counter_for is None or self.left <= 0:
            return None
        counter = self.counter_for(topic, row.partition)
        cap = min(max(1, row.length - row.lag), self.left)
        n, exact = counter.between(row.floor, id_after(row.last), cap)
        self.left -= n
        return row.lag + n, exact


def _rules(group: str, policy: RetentionPolicy, java: JavaRetention | None) -> list[_Rule]:
    out = []
    if java is not None:
        out.append(_Rule("java", java.maxlen, java.retention_ms, frontier=java.frontier_trim))
    if group in policy.ignore_groups and policy.enabled:
        by = "mqcore (group opted out)"
        out.append(_Rule(by, policy.maxlen, policy.max_age_ms, below_others=policy.consumed))
    return out


def _row(p: PartitionLag, leased: bool, now: int) -> _Row:
    last = p.last_delivered_id or "0-0"
    pending_id = p.oldest_pending_id
    floor = group_floor(last, pending_id)
    pending = p.pending
    lag = p.lag or 0
    first_ms = None
    if floor == pending_id:
        first_ms = id_ms(floor)
    elif lag:
        first_ms = now - (p.lag_ms or 0)
    exact = not pending and p.lag_exact
    return _Row(p.partition, floor, lag, pending, p.length, exact, first_ms, last, leased)


def _length(
    topic: str, row: _Row, n: int, rule: _Rule, risk: _Risk, budget: _Budget, now: int
) -> None:
    near = n - n // HEADROOM  # a backlog over this is within a tenth of the bound
    high = row.low if row.exact else max(row.low, row.length)
    if high <= near:
        return
    size = row.low
    if size <= near:
        counted = budget.backlog(topic, row)
        if counted is None or (not counted[1] and counted[0] <= near):  # it may be over
            risk.hit(rule.by, 0, now, may=True)
            return
        size = counted[0]
    if size > near:
        risk.hit(rule.by, max(0, size - n), now)


def _age(row: _Row, age: int, rule: _Rule, risk: _Risk, now: int) -> None:
    if row.first_ms is None:
        return
    goes_at = row.first_ms + age
    if goes_at - age // HEADROOM <= now:
        risk.hit(rule.by, 1 if goes_at <= now else 0, max(now, goes_at))


def _cut(row: _Row, cut: str | None, rule: _Rule, risk: _Risk, now: int, may: bool) -> None:
    if cut is not None and row.first_ms is not None and older(row.floor, cut):
        risk.hit(rule.by, 0 if may else 1, now, may=may)


def retention_risks(
    snap: ClusterSnapshot,
    policy: RetentionPolicy,
    java: JavaRetention | None,
    counter_for: CounterFor | None = None,
    probe_entries: int = PROBE_ENTRIES,
) -> dict[tuple[str, str], RetentionRisk]:
    """(topic, group) -> its risk (partitions, entries lost at least, by which rules, when
    the first goes, whether it only *may*), for each group a rule is about to take backlog
    entries from. ``counter_for(topic, partition)`` counts a backlog the snapshot cannot tell
    (None: such a backlog counts as "may"): the pass's read end calls this, as it reads."""
    budget = _Budget(counter_for, probe_entries)
    now = snap.taken_at_ms
    risks: dict[tuple[str, str], RetentionRisk] = {}
    if java is None and not (policy.ignore_groups and policy.enabled):
        return risks
    for topic in snap.topics:
        _topic(topic, policy, java, budget, now, risks)
    return risks


def _topic(
    topic: TopicSnapshot,
    policy: RetentionPolicy,
    java: JavaRetention | None,
    budget: _Budget,
    now: int,
    risks: dict[tuple[str, str], RetentionRisk],
) -> None:
    name, groups = topic.topic, topic.groups
    leased = {(x.group, x.partition) for x in topic.leases if x.owner}
    rows: dict[str, list[_Row]] = {}
    by_partition: dict[int, list[tuple[str, _Row]]] = {}
    for g in groups:
        gname = g.group
        rows[gname] = [_row(p, (gname, p.partition) in leased, now) for p in g.partitions]
        for row in rows[gname]:
            by_partition.setdefault(row.partition, []).append((gname, row))
    for group in groups:
        gname = group.group
        rules = _rules(gname, policy, java)
        if not rules:
            continue
        parts: list[int] = []
        total = _Risk()
        for row in rows[gname]:
            risk = _Risk()
            others = [(g, o) for g, o in by_partition[row.partition] if g != gname]
            for rule in rules:
                if rule.maxlen is not None:
                    _length(name, row, rule.maxlen, rule, risk, budget, now)
                if rule.age_ms is not None:
                    _age(row, rule.age_ms, rule, risk, now)
                if rule.frontier and not row.leased:  # Java waits only for leased groups
                    positions = [id_after(o.last) for _g, o in others if o.leased]
                    cut = min(positions, key=id_tuple, default=None)
                    _cut(row, cut, rule, risk, now, may=True)
                if rule.below_others:  # mqcore's consumed rule, for an opted-out group
                    kept = [o.floor for g, o in others if g not in policy.ignore_groups]
                    cut = min(kept, key=id_tuple, default=None)
                    _cut(row, cut, rule, risk, now, may=False)
            if risk.by:
                parts.append(row.partition)
                total.merge(risk)
        if parts:
            risks[name, gname] = RetentionRisk(
                partitions=parts,
                lost_at_least=total.lost,
                by=sorted(total.by),
                first_loss_at_ms=total.first_at,
                may=total.may and not total.lost,
            )
