"""Where an operator moves a consumer group: the target, and the plan of one move.

A target is ``latest`` (skip everything not yet delivered), ``earliest``
(deliver every entry still in the partition again), ``time`` (epoch ms: the
group next receives the first entry at or after that time) or ``id`` (the
group's last-delivered id becomes that id: it next receives the first entry
after it). ``XGROUP SETID`` leaves the pending entries list alone: entries
already delivered and not acked stay pending whatever the move.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mqcore.clock import ms_from_text
from mqcore.codec import id_tuple, validate_id
from mqcore.errors import InvalidArgumentError

__all__ = ["PEL_NOTE", "TARGET_KINDS", "PositionMove", "PositionPlan", "PositionTarget"]

TARGET_KINDS = ("latest", "earliest", "time", "id")
PEL_NOTE = (
    "Moving the position does not change pending entries: entries delivered and not "
    "acknowledged stay pending and are still retried, reclaimed or acknowledged as before."
)


@dataclass(frozen=True, slots=True)
class PositionTarget:
    """``kind`` in :data:`TARGET_KINDS`; ``value`` is epoch ms (time), an id (id) or None."""

    kind: str
    value: int | str | None = None

    @classmethod
    def of(cls, kind: str, value: Any = None) -> PositionTarget:
        """A checked target; ``value`` of a time may be epoch ms or an ISO-8601 instant."""
        kind = (kind or "").strip().lower()
        if kind in ("latest", "earliest"):
            return cls(kind)
        if kind == "time":
            return cls("time", _time_ms(value))
        if kind == "id":
            text = str(value if value is not None else "").strip()
            validate_id(text)
            ms, seq = id_tuple(text)
            return cls("id", f"{ms}-{seq}")
        raise InvalidArgumentError(
            f"position target must be latest, earliest, time or id, not {kind!r}"
        )

    @classmethod
    def parse(cls, text: str) -> PositionTarget:
        """``latest``, ``earliest``, ``time:<ISO-8601 or epoch ms>`` or ``id:<ID>``."""
        kind, sep, value = (text or "").strip().partition(":")
        if kind.lower() in ("time", "id") and not sep:
            raise InvalidArgumentError(f"write {kind.lower()}:<value>, e.g. time:1700000000000")
        if kind.lower() in ("latest", "earliest") and sep:
            raise InvalidArgumentError(f"{kind.lower()} takes no value")
        return cls.of(kind, value if sep else None)

    def describe(self) -> str:
        return self.kind if self.value is None else f"{self.kind}:{self.value}"

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "value": self.value}


def _time_ms(value: Any) -> int:
    text = str(value if value is not None else "").strip()
    try:
        ms = ms_from_text(text)
    except ValueError:
        raise InvalidArgumentError(
            f"invalid time {text!r}: expected epoch milliseconds or ISO-8601, "
            "e.g. 2024-05-01T12:00:00Z"
        ) from None
    if not 0 <= ms < 2**63:
        raise InvalidArgumentError(f"time {text!r} is out of range")
    return ms


@dataclass(frozen=True, slots=True)
class PositionMove:
    """One partition's move: where the group is, where it goes, what that means.

    ``lag_before`` and ``lag_after`` count the entries present in the partition
    after each position (what the group would still receive); ``lag_after`` is
    the lag ``XINFO GROUPS`` reports once the move is applied. ``skipped`` are
    entries the group will not receive (moving forward), ``redelivered`` entries
    it receives again (moving back). ``pending`` is the group's pending count on
    the partition, unchanged by the move.
    """

    partition: int
    current_id: str
    current_entries_read: int | None
    lag_before: int
    target_id: str
    target_entries_read: int
    lag_after: int
    skipped: int
    redelivered: int
    pending: int


@dataclass(frozen=True, slots=True)
class PositionPlan:
    """A dry run (``applied`` False) or the moves made (``applied`` True)."""

    topic: str
    group: str
    target: dict[str, Any]
    moves: list[PositionMove]
    applied: bool = False
    note: str = PEL_NOTE
    pipelines: tuple[str, ...] = ()  # pipelines that move this group (a move is refused)
    skipped: int = field(init=False)
    redelivered: int = field(init=False)
    direction: str = field(init=False)

    def __post_init__(self) -> None:
        skipped = sum(m.skipped for m in self.moves)
        redelivered = sum(m.redelivered for m in self.moves)
        object.__setattr__(self, "skipped", skipped)
        object.__setattr__(self, "redelivered", redelivered)
        object.__setattr__(self, "direction", direction_of(skipped, redelivered))


def direction_of(skipped: int, redelivered: int) -> str:
    """``skip``, ``rewind``, ``mixed`` or ``none`` from the totals of a move."""
    if skipped and redelivered:
        return "mixed"
    if skipped:
        return "skip"
    if redelivered:
        return "rewind"
    return "none"
