"""The rows of "export all matching": a topic's lag, a group's pending entries, its DLQ.

Each source reads the MQ Redis in bounded pieces while the response streams: lag is
one bounded read per topic (as the lag API), pending entries come in ``XPENDING``
pages of one partition at a time (:class:`mqcore.admin.export.PendingRows`), letters
in DLQ pages of at most :data:`DLQ_PAGE` letters and about :data:`DLQ_PAGE_BYTES`
bytes. Nothing is held beyond one page. At most ``max_rows`` rows are produced
(``truncated`` says when more matched); a pending or DLQ source reads at most
``max_scan`` entries (``complete`` is False when that stopped it).

Filters are the pages' query parameters, parsed and checked here before the first row
(bad input answers 400 and no audit row is written). Payloads and header values of a
sensitive topic are masked (:mod:`dashboard.masking`) for users who may not see them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from dashboard import clusters
from dashboard.masking import MASK, check_text_filter, mask_headers
from dashboard.permissions import payload_visible
from dashboard.selectors.dlq import DlqFilterError, DlqFilters
from dashboard.selectors.pages.params import NotFoundError, ParamError, mq_refusals, parse_int
from dashboard.selectors.pages.snapshot import topic_visible_require
from dashboard.selectors.pages.topic import group_lags
from mqcore.admin.export import PendingRows
from mqcore.export_rows import (
    DLQ_COLUMNS,
    LAG_COLUMNS,
    PENDING_COLUMNS,
    lag_rows,
    letter_row,
    pending_row,
)
from mqcore.keys import validate_name

__all__ = [
    "DLQ_PAGE",
    "EXPORT_FORMATS",
    "EXPORT_KINDS",
    "ExportSource",
    "export_source",
]

EXPORT_KINDS = ("lag", "pending", "dlq")
EXPORT_FORMATS = ("csv", "json")
DLQ_PAGE = 200
DLQ_PAGE_BYTES = 2**20  # of letters per DLQ page read (big payloads: fewer letters a page)


@dataclass
class ExportSource:
    """What one export writes: its columns, its rows (an iterator read while streaming),
    the filters it applied, and counters the iterator keeps up to date."""

    kind: str
    columns: tuple[str, ...]
    filters: dict[str, Any]
    max_rows: int
    masked: bool = False
    stats: dict[str, Any] = field(
        default_factory=lambda: {"rows": 0, "scanned": 0, "truncated": False, "complete": True}
    )
    rows: Iterator[dict[str, Any]] = field(default_factory=lambda: iter(()))


def _max_rows(query: Mapping[str, Any]) -> int:
    cap = int(settings.EXPORT_MAX_ROWS)
    return parse_int(query.get("max_rows"), "max_rows", default=cap, minimum=1, maximum=cap) or cap


def _lag(cluster: str, topic: str, query: Mapping[str, Any], user: Any) -> ExportSource:
    group = str(query.get("group") or "").strip() or None
    groups = group_lags(cluster, topic, user=user, group=group)
    src = ExportSource("lag", LAG_COLUMNS, {"group": group}, _max_rows(query))

    def rows() -> Iterator[dict[str, Any]]:
        for row in lag_rows(groups):
            if src.stats["rows"] >= src.max_rows:
                src.stats["truncated"] = True
                return
            src.stats["rows"] += 1
            src.stats["scanned"] += 1
            yield row

    src.rows = rows()
    return src


def _pending(cluster: str, topic: str, query: Mapping[str, Any], user: Any) -> ExportSource:
    topic_visible_require(user, cluster, topic)
    group = str(query.get("group") or "").strip()
    if not group:
        raise ParamError("group is required")
    partition = parse_int(query.get("partition"), "partition", default=None)
    min_idle_ms = parse_int(query.get("min_idle_ms"), "min_idle_ms", default=None)
    min_idle_s = parse_int(query.get("min_idle_s"), "min_idle_s", default=None)
    if min_idle_ms is None and min_idle_s is not None:
        min_idle_ms = min_idle_s * 1000  # the page's unit
    min_deliveries = parse_int(query.get("min_deliveries"), "min_deliveries", default=None)
    consumer = str(query.get("consumer") or "").strip()[:200] or None
    admin = clusters.admin(cluster)
    with mq_refusals(topic):
        validate_name("group", group)
        count = admin.partition_count(topic)
    if partition is not None and partition >= count:
        raise ParamError(f"partition {partition} does not exist")
    if group not in admin.groups(topic, count):  # live: a group newer than the snapshot too
        raise NotFoundError(f"unknown group {group!r} of topic {topic!r}")
    filters = {
        "group": group,
        "consumer": consumer,
        "partition": partition,
        "min_idle_ms": min_idle_ms,
        "min_deliveries": min_deliveries,
    }
    src = ExportSource("pending", PENDING_COLUMNS, filters, _max_rows(query))
    scan = PendingRows(
        admin.client,
        admin.keys,
        topic,
        group,
        [partition] if partition is not None else list(range(count)),
        admin.groups,
        consumer=consumer,
        min_idle_ms=min_idle_ms or 0,
        min_deliveries=min_deliveries or 0,
        max_rows=src.max_rows,
        max_scan=int(settings.EXPORT_MAX_SCAN),
    )

    def rows() -> Iterator[dict[str, Any]]:
        for e in scan:
            src.stats.update(rows=scan.rows, scanned=scan.scanned)
            yield pending_row(e)
        src.stats.update(
            rows=scan.rows,
            scanned=scan.scanned,
            truncated=scan.truncated,
            complete=scan.complete,
        )

    src.rows = rows()
    return src


def _letter_row(letter: Any, *, visible: bool) -> dict[str, Any]:
    """The letter's export row, payload and header values masked when not ``visible``."""
    row = letter_row(letter)
    row["headers"] = mask_headers(letter.headers, visible=visible)
    if not visible:
        row.update(payload=MASK, payload_hex=None)
    return row


def _dlq(cluster: str, topic: str, query: Mapping[str, Any], user: Any) -> ExportSource:
    topic_visible_require(user, cluster, topic)
    try:
        filters = DlqFilters.from_query(dict(query.items()))
    except DlqFilterError as exc:
        raise ParamError(str(exc)) from None
    visible = payload_visible(user, cluster, topic)
    try:
        check_text_filter(filters.text, visible=visible)
    except ValueError as exc:
        raise ParamError(str(exc)) from None
    dlq = clusters.dead_letters(cluster)
    # every read of a page is sized from the letters seen so far, about this many bytes
    byte_bound = min(DLQ_PAGE_BYTES, int(settings.DLQ_TEXT_FILTER_MAX_BYTES))
    max_scan = int(settings.EXPORT_MAX_SCAN)

    def page(before: str | None, scan: int) -> Any:
        with mq_refusals(topic):
            return dlq.page(
                topic,
                before=before,
                limit=DLQ_PAGE,
                max_scan=max(1, min(20_000, scan)),
                max_scan_bytes=byte_bound,
                **filters.kwargs(),
            )

    first = page(None, max_scan)  # read now: an unknown topic or bad filter fails up front
    src = ExportSource("dlq", DLQ_COLUMNS, dict(filters.raw), _max_rows(query), not visible)

    def rows() -> Iterator[dict[str, Any]]:
        current = first
        while True:
            src.stats["scanned"] += current.scanned
            for letter in current.letters:
                if src.stats["rows"] >= src.max_rows:
                    src.stats["truncated"] = True
                    return
                src.stats["rows"] += 1
                yield _letter_row(letter, visible=visible)
            if current.next_cursor is None:
                return
            left = max_scan - src.stats["scanned"]
            if left <= 0:
                src.stats["complete"] = False
                return
            current = page(current.next_cursor, left)

    src.rows = rows()
    return src


_SOURCES: dict[str, Callable[[str, str, Mapping[str, Any], Any], ExportSource]] = {
    "lag": _lag,
    "pending": _pending,
    "dlq": _dlq,
}


def export_source(
    kind: str, *, cluster: str, topic: str, query: Mapping[str, Any], user: Any
) -> ExportSource:
    """The checked source of one export (filters from ``query``, as the pages name them)."""
    if kind not in _SOURCES:
        raise ParamError(f"export kind must be one of {', '.join(EXPORT_KINDS)}")
    return _SOURCES[kind](cluster, topic, query, user)
