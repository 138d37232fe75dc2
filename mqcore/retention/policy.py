"""Retention rules: what mqcore's housekeeper deletes, and what a Java deployment's does.

mqcore's housekeeper (:mod:`mqcore.retention.trim`) applies :class:`RetentionPolicy`
and never deletes an entry that a consumer group on the stream has not read and
acked, unless an operator opted that group out by name. The Java library trims the
same streams with its own options (``MqOptions``: ``retentionMaxLenPerPartition``,
also applied by its producers on every write, ``retentionMs`` and the commit-frontier
trim of its ``StreamRetentionHousekeeper``), which do not look at every group;
:class:`JavaRetention` describes them so the retention view can show what they
would take.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mqcore.clock import duration_s
from mqcore.errors import InvalidArgumentError
from mqcore.keys import validate_name

__all__ = ["JavaRetention", "RetentionPolicy"]

MAX_MAXLEN = 10**12


def _maxlen(value: Any, what: str) -> int | None:
    if value in (None, "", 0, "0"):
        return None
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"{what}: a whole number of entries, not {value!r}") from None
    if not 0 < n <= MAX_MAXLEN:
        raise InvalidArgumentError(f"{what}: between 1 and {MAX_MAXLEN} entries, not {n}")
    return n


def _age_ms(value: Any, what: str) -> int | None:
    if value in (None, "", 0, "0"):
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        seconds = value
    else:
        try:
            seconds = duration_s(value)
        except ValueError as exc:
            raise InvalidArgumentError(f"{what}: {exc}") from None
    if seconds <= 0:
        raise InvalidArgumentError(f"{what}: must be more than zero")
    return seconds * 1000


@dataclass(frozen=True)
class RetentionPolicy:
    """mqcore's housekeeper rules for partition streams; all off deletes nothing.

    ``maxlen``: keep at most this many entries per partition. ``max_age_ms``: delete
    entries older than this. ``consumed``: delete entries every group has read and
    acked. Each rule stops at the unread entries of every group on the stream
    (its lowest pending id, or what follows its last-delivered id), except the groups
    in ``ignore_groups``, which an operator named (an abandoned group, say).
    """

    maxlen: int | None = None
    max_age_ms: int | None = None
    consumed: bool = False
    ignore_groups: frozenset[str] = field(default_factory=frozenset)

    @property
    def enabled(self) -> bool:
        return self.maxlen is not None or self.max_age_ms is not None or self.consumed

    @classmethod
    def build(
        cls,
        *,
        maxlen: Any = None,
        max_age: Any = None,
        consumed: Any = False,
        ignore_groups: Any = (),
    ) -> RetentionPolicy:
        """A validated policy: ``max_age`` as seconds (int) or a duration such as ``7d``;
        InvalidArgumentError on anything else."""
        groups = [ignore_groups] if isinstance(ignore_groups, str) else list(ignore_groups or ())
        for g in groups:
            try:
                validate_name("group", str(g))
            except ValueError as exc:
                raise InvalidArgumentError(str(exc)) from None
        return cls(
            maxlen=_maxlen(maxlen, "maxlen"),
            max_age_ms=_age_ms(max_age, "max age"),
            consumed=bool(consumed),
            ignore_groups=frozenset(str(g) for g in groups),
        )

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any] | None) -> RetentionPolicy:
        """From settings: ``{"maxlen": 1000000, "max_age": "7d", "consumed": true,
        "ignore_groups": ["old"]}`` (every key optional)."""
        data = data or {}
        unknown = set(data) - {"maxlen", "max_age", "consumed", "ignore_groups"}
        if unknown:
            raise InvalidArgumentError(f"retention: unknown settings {sorted(unknown)}")
        return cls.build(
            maxlen=data.get("maxlen"),
            max_age=data.get("max_age"),
            consumed=data.get("consumed", False),
            ignore_groups=data.get("ignore_groups") or (),
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "maxlen": self.maxlen,
            "max_age_ms": self.max_age_ms,
            "consumed": self.consumed,
            "ignore_groups": sorted(self.ignore_groups),
        }


@dataclass(frozen=True)
class JavaRetention:
    """The Java deployment's retention on the same streams (its ``MqOptions``).

    ``maxlen``: ``retentionMaxLenPerPartition`` (Java default 100,000; its producers
    and housekeeper trim to it exactly, read or not). ``retention_ms``: its age
    rule (off by default). ``frontier_trim``: its housekeeper trims each partition
    below the lowest commit frontier of the groups that hold a live lease there.
    """

    maxlen: int | None = 100_000
    retention_ms: int | None = None
    frontier_trim: bool = True

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any] | None) -> JavaRetention | None:
        """None when no Java deployment shares the streams (``data`` empty or None)."""
        if not data:
            return None
        unknown = set(data) - {"maxlen", "retention", "frontier_trim"}
        if unknown:
            raise InvalidArgumentError(f"java retention: unknown settings {sorted(unknown)}")
        return cls(
            maxlen=_maxlen(data.get("maxlen", 100_000), "java maxlen"),
            retention_ms=_age_ms(data.get("retention"), "java retention"),
            frontier_trim=bool(data.get("frontier_trim", True)),
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "maxlen": self.maxlen,
            "retention_ms": self.retention_ms,
            "frontier_trim": self.frontier_trim,
        }
