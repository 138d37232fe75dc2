"""Whole-PEL reads for exports: a group's pending entries, partition by partition, in
bounded ``XPENDING`` pages (the page's heap is for one sorted page, this is for all).

Each read is one ``XPENDING key group (last + COUNT`` of :data:`PENDING_PAGE`
entries on one partition; nothing is held beyond one page, so an export of a
million-entry PEL streams in constant memory and never blocks Redis for long.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from mqcore.admin.pending import PENDING_PAGE, pipeline_pending
from mqcore.codec import decode_text
from mqcore.config import RedisClient
from mqcore.errors import InvalidArgumentError, UnknownGroupError
from mqcore.keys import KeySpace
from mqcore.models import PendingEntry

__all__ = ["PendingRows"]


@dataclass
class PendingRows:
    """Iterate the matching pending entries of ``group`` over ``parts`` (ascending ids per
    partition), at most ``max_rows`` of them and ``max_scan`` PEL entries read.

    After the loop: ``scanned`` entries read, ``rows`` yielded, ``truncated`` when
    ``max_rows`` stopped it, ``complete`` False when ``max_scan`` did. ``groups``
    (:meth:`mqcore.admin.Admin.groups`) tells an unknown group from an empty one.
    """

    client: RedisClient
    keys: KeySpace
    topic: str
    group: str
    parts: list[int]
    groups: Callable[[str, int], list[str]]
    consumer: str | None = None
    min_idle_ms: int = 0
    min_deliveries: int = 0
    max_rows: int = 100_000
    max_scan: int = 2_000_000
    page: int = PENDING_PAGE
    scanned: int = 0
    rows: int = 0
    truncated: bool = False
    complete: bool = True

    def __post_init__(self) -> None:
        if self.max_rows < 1 or self.max_scan < 1 or not 1 <= self.page <= PENDING_PAGE:
            raise InvalidArgumentError("max_rows and max_scan must be >= 1, page 1..1000")
        if self.min_idle_ms < 0 or self.min_deliveries < 0:
            raise InvalidArgumentError("minimums must be >= 0")

    def __iter__(self) -> Iterator[PendingEntry]:
        seen_group = False
        for p in self.parts:
            cursor = "-"
            key = self.keys.partition(self.topic, p)
            while True:
                if self.scanned >= self.max_scan:
                    self.complete = False
                    return
                want = min(self.page, self.max_scan - self.scanned)
                call = ("xpending_range", (key, self.group, cursor, "+", want, self.consumer))
                [reply] = pipeline_pending(self.client, [call])
                if reply is None:
                    break
                seen_group = True
                self.scanned += len(reply)
                for e in reply:
                    if (
                        int(e["time_since_delivered"]) < self.min_idle_ms
                        or int(e["times_delivered"]) < self.min_deliveries
                    ):
                        continue
                    if self.rows >= self.max_rows:
                        self.truncated = True
                        return
                    self.rows += 1
                    yield PendingEntry(
                        partition=p,
                        id=decode_text(e["message_id"]),
                        consumer=decode_text(e["consumer"]),
                        idle_ms=int(e["time_since_delivered"]),
                        deliveries=int(e["times_delivered"]),
                    )
                if len(reply) < want:
                    break
                cursor = "(" + decode_text(reply[-1]["message_id"])
        parts = max(self.parts) + 1 if self.parts else 0
        if not seen_group and self.group not in self.groups(self.topic, parts):
            raise UnknownGroupError(f"group {self.group!r} does not exist on topic {self.topic!r}")
