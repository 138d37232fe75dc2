"""Which events a timeline read keeps: one filter for each source it reads (the console
store's collector events, the audit log, mqcore's outside events)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["EVERY_EVENT", "TimelineFilter"]


@dataclass(frozen=True, slots=True)
class TimelineFilter:
    """Which events a timeline read keeps, the same for each of its sources (the console
    store's collector events, the audit log, mqcore's outside events): one topic (None: the
    whole cluster), kinds (none: every kind), one group, and ``since_ms`` .. ``until_ms``
    (epoch ms, both ends included; None: open)."""

    topic: str | None = None
    kinds: tuple[str, ...] = ()
    group: str | None = None
    since_ms: int | None = None
    until_ms: int | None = None

    @property
    def narrows(self) -> bool:
        """Whether it keeps less than every event of its time range."""
        return bool(self.topic or self.kinds or self.group)

    def keeps(self, kind: str, topic: str, group: str | None) -> bool:
        """Whether an event of ``kind`` on ``topic`` (and ``group``) passes the kinds, topic
        and group (a read bounds the times)."""
        return (
            (not self.kinds or kind in self.kinds)
            and (not self.topic or topic == self.topic)
            and (not self.group or group == self.group)
        )


EVERY_EVENT = TimelineFilter()
