"""What each retention rule deletes next on one partition, and from which group's backlog.

Every rule that deletes partition entries has a row: mqcore's housekeeper rules
(``maxlen``, ``age``, ``consumed``: they stop at every group's floor but an opted-out
group's) and a Java deployment's (``java-maxlen``: its producers on every write and its
housekeeper; ``java-age``; ``java-frontier``: below the lowest commit frontier of the
groups holding a lease). mqcore's producer and retry mover do not trim, so they have
no row.

Each row tells how many entries the rule deletes at its next deletion and when, and
per group whose backlog it reaches - everything at or above the group's floor (its
oldest pending entry, or what follows its last-delivered entry) - a :class:`Threat`:
the entries it loses now, or when its floor entry goes (Java's length rule: the writes
left divided by the produce rate; an age rule: the floor entry's time plus the age).
Java waits for no group without a lease (a stopped consumer group, a pipeline that is
not running); its rules reach those groups' backlogs like any other.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mqcore.codec import id_tuple
from mqcore.retention.counting import Counter, Split, id_ms, older
from mqcore.retention.policy import JavaRetention, RetentionPolicy

__all__ = ["FloorInfo", "Partition", "RuleEffect", "Threat", "java_effects", "mqcore_effects"]


@dataclass(frozen=True)
class FloorInfo:
    """What the rules need of one group on the partition."""

    group: str
    floor_id: str
    split: Split  # entries below its floor / at or above it
    leased: bool
    ignored: bool  # opted out of mqcore's housekeeper


@dataclass
class Threat:
    """A rule reaching a group's backlog (entries at or above its floor)."""

    group: str
    lost: int  # entries of its backlog the rule deletes now (0: none yet)
    exact: bool  # False: ``lost`` is a lower bound, or the floor's side was too long to count
    at_ms: int | None  # when its floor entry goes (now or later); None: not foreseeable
    writes_left: int | None = None  # length rules: writes before its floor entry goes
    leased: bool = False  # False: Java does not wait for it (stopped, or a pipeline not running)


@dataclass
class RuleEffect:
    rule: str  # maxlen | age | consumed | java-maxlen | java-age | java-frontier
    by: str  # "mqcore housekeeper" or "java"
    detail: str
    would_delete: int  # entries its next deletion takes
    exact: bool
    held_by: str | None = None  # mqcore: the group whose unread entries stop the rule
    held: int = 0
    at_risk: dict[str, int] = field(default_factory=dict)  # group -> its entries lost now
    next_at_ms: int | None = None  # when the next deletion happens; None: not foreseeable
    when: str = ""  # the next deletion's time in words
    threats: list[Threat] = field(default_factory=list)


@dataclass(frozen=True)
class Partition:
    """What the rules need of the partition: its length, first entry, time and write rate."""

    length: int
    first_id: str | None
    now: int
    rate_per_ms: float | None
    counter: Counter


def _length_threat(
    f: FloorInfo, n: int, part: Partition, run_at: int, rate: float | None
) -> Threat:
    """A keep-the-newest-``n`` rule against ``f``'s backlog."""
    low, high = f.split.above, f.split.above_at_most(part.length)
    if low > n:
        return Threat(f.group, low - n, f.split.exact, run_at, 0, f.leased)
    if high > n:  # the floor's side was too long to count: it may be reached now
        return Threat(f.group, 1, False, run_at, 0, f.leased)
    writes = n - high + 1
    at = part.now + round(writes / rate) if rate else None
    return Threat(f.group, 0, f.split.exact, at, writes, f.leased)


def _cut_threat(f: FloorInfo, cut: str, part: Partition, run_at: int) -> Threat | None:
    """A delete-below-``cut`` rule against ``f``'s backlog (None: it does not reach it)."""
    if not older(f.floor_id, cut) or f.split.above == 0:
        return None
    lost, exact = part.counter.between(f.floor_id, cut)
    return Threat(f.group, lost, exact, run_at, None, f.leased) if lost else None


def _age_threat(f: FloorInfo, age_ms: int, part: Partition, run_at: int) -> Threat | None:
    cut = f"{max(0, part.now - age_ms)}-0"
    hit = _cut_threat(f, cut, part, run_at)
    if hit is not None or f.split.above == 0:
        return hit
    return Threat(f.group, 0, True, id_ms(f.floor_id) + age_ms, None, f.leased)


def _mark_now(threats: list[Threat]) -> dict[str, int]:
    return {t.group: t.lost for t in threats if t.lost > 0}


def mqcore_effects(
    policy: RetentionPolicy, floors: list[FloorInfo], part: Partition, interval_ms: int | None
) -> list[RuleEffect]:
    """mqcore's housekeeper rules: held at every floor but an opted-out group's."""
    if not policy.enabled:
        return []
    kept = [f for f in floors if not f.ignored]
    ignored = [f for f in floors if f.ignored]
    low = min(kept, key=lambda f: id_tuple(f.floor_id)) if kept else None
    consumed = low.split.below if low is not None else part.length
    c_exact = low.split.exact if low is not None else True
    # scheduled: by its next run; otherwise whenever it is run (trim now, mqcore housekeep)
    run_at = part.now + interval_ms if interval_ms else part.now
    when = (
        f"next housekeeper run (every {interval_ms // 1000} s)"
        if interval_ms
        else "its next run (not scheduled: trim now or mqcore housekeep)"
    )
    by = "mqcore housekeeper"
    out: list[RuleEffect] = []

    def add(rule: str, detail: str, wanted: int, exact: bool, threats: list[Threat]) -> None:
        would = min(wanted, consumed)
        out.append(
            RuleEffect(
                rule, by, detail, would, exact and c_exact,
                held_by=low.group if low is not None and would < wanted else None,
                held=max(0, wanted - would), at_risk=_mark_now(threats),
                next_at_ms=run_at if would else None, when=when if would else "held",
                threats=threats,
            )
        )  # fmt: skip

    if policy.maxlen is not None:
        n = policy.maxlen
        threats = [_length_threat(f, n, part, run_at, part.rate_per_ms) for f in ignored]
        add("maxlen", f"keep {n} entries", max(0, part.length - n), True, threats)
    if policy.max_age_ms is not None:
        cut = f"{max(0, part.now - policy.max_age_ms)}-0"
        wanted, exact = part.counter.between(part.first_id or "0-0", cut)
        aged = [_age_threat(f, policy.max_age_ms, part, run_at) for f in ignored]
        detail = f"delete entries older than {policy.max_age_ms // 1000} s"
        add("age", detail, wanted, exact, [t for t in aged if t is not None])
    if policy.consumed:
        furthest = max((f.floor_id for f in kept), key=id_tuple, default=None)
        wanted, exact = (
            part.counter.between(part.first_id or "0-0", furthest) if furthest else (0, True)
        )
        hits = [_cut_threat(f, low.floor_id, part, run_at) for f in ignored] if low else []
        detail = "delete entries every group read and acked"
        add("consumed", detail, wanted, exact, [t for t in hits if t is not None])
    return out


def java_effects(
    java: JavaRetention,
    floors: list[FloorInfo],
    frontiers: dict[str, str],
    part: Partition,
) -> list[RuleEffect]:
    """The Java deployment's rules: they wait for no group without a lease, and its length and
    age rules for no group at all."""
    out: list[RuleEffect] = []
    now, rate = part.now, part.rate_per_ms
    if java.maxlen is not None:
        n = java.maxlen
        over = max(0, part.length - n)
        threats = [_length_threat(f, n, part, now, rate) for f in floors]
        if over:
            at: int | None = now
            when = "now: Java's producers trim on each write, its housekeeper on each run"
        else:
            writes = n - part.length + 1
            at = now + round(writes / rate) if rate else None
            when = f"after {writes} more writes" + ("" if rate else " (nothing written lately)")
        out.append(
            RuleEffect(
                "java-maxlen", "java", f"producers and housekeeper keep {n} entries, read or not",
                over, True, at_risk=_mark_now(threats), next_at_ms=at, when=when, threats=threats,
            )
        )  # fmt: skip
    if java.retention_ms is not None:
        age = java.retention_ms
        cut = f"{max(0, now - age)}-0"
        n_old, exact = part.counter.between(part.first_id or "0-0", cut)
        first_at = id_ms(part.first_id) + age if part.first_id else None
        aged = [_age_threat(f, age, part, now) for f in floors]
        threats = [t for t in aged if t is not None]
        out.append(
            RuleEffect(
                "java-age", "java", f"entries older than {age // 1000} s", n_old, exact,
                at_risk=_mark_now(threats),
                next_at_ms=now if n_old else first_at,
                when="its next housekeeper run" if n_old else "when the first entry is that old",
                threats=threats,
            )
        )  # fmt: skip
    if java.frontier_trim:
        out.append(_java_frontier(floors, frontiers, part))
    return out


def _java_frontier(
    floors: list[FloorInfo], frontiers: dict[str, str], part: Partition
) -> RuleEffect:
    leased = [f for f in floors if f.leased and f.group in frontiers]
    if not leased:
        return RuleEffect(
            "java-frontier", "java", "no leased group has a commit frontier", 0, True,
            when="not until a leased group writes a frontier",
        )  # fmt: skip
    low = min(leased, key=lambda f: id_tuple(frontiers[f.group]))
    cut = frontiers[low.group]
    n, exact = part.counter.between(part.first_id or "0-0", cut)
    hits = [_cut_threat(f, cut, part, part.now) for f in floors]
    threats = [t for t in hits if t is not None]
    return RuleEffect(
        "java-frontier", "java",
        f"below the lowest commit frontier of the leased groups ({low.group}: {cut})",
        n, exact, at_risk=_mark_now(threats), next_at_ms=part.now if n else None,
        when="its next housekeeper run" if n else "when a leased group's frontier moves",
        threats=threats,
    )  # fmt: skip
