"""The topic message browser (page and API): its typed input in, a masked page out.

Its input, :class:`Browse` (the page's form and the API's query string alike):
``partition`` (none: all), ``order`` (newest, oldest), ``from_id`` or ``from_time``
(epoch ms, or an ISO-8601 instant / the ``datetime-local`` value of the form, UTC),
``limit``, ``max_scan``, ``cursor``, and the filters ``key``, ``header`` (NAME or
NAME=VALUE), ``text`` and ``where`` (the expression, :mod:`mqcore.browse.expr`);
``max_bytes`` of payload per row. The scan is live from the MQ Redis and bounded
(:mod:`mqcore.browse.scan`). Users who may not see the topic's payloads get them masked,
and filters that look into payloads or header values are refused for them (as the DLQ's
text search).

A ``where`` expression lowers ``max_scan`` to the CPU budget of
``BROWSE_EXPRESSION_BUDGET`` term evaluations a request (:meth:`Filters.scan_within`);
the page says so (``max_scan_requested``, ``expression_terms``, ``stopped_at_bound``)
and its cursor goes on from where the budget stopped it.

The live tail (:func:`tail_get`, :mod:`mqcore.browse.tail`; its input :class:`Tail`) takes
the same filters, ``partition`` and ``max_bytes``, masks the same way, and reads ``cursor``
(the previous poll's; none: open at now), ``rate`` (messages a second shown, the rest
skipped and counted) and ``paused`` (the cursor checked and handed back, nothing read: a
paused page).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any, Literal

import msgspec
from django.conf import settings

from dashboard import clusters
from dashboard.masking import check_data_filter, mask_message
from dashboard.permissions import payload_visible
from dashboard.selectors.pages.params import ParamError, doc
from dashboard.selectors.pages.snapshot import topic_visible_require
from mqcore.browse import BrowseQuery, Filters, browse_topic
from mqcore.browse.rows import ROW_PREVIEW_BYTES, message_row, page_dict, parse_start_time
from mqcore.browse.scan import DEFAULT_MAX_SCAN, MAX_LIMIT, MAX_SCAN
from mqcore.browse.tail import MAX_TAIL_RATE, TAIL_RATE, tail_topic

__all__ = [
    "MAX_ROW_BYTES",
    "TAIL_POLL_SECONDS",
    "Browse",
    "Tail",
    "browse_get",
    "tail_get",
]

MAX_ROW_BYTES = 64 * 1024  # the most payload bytes per row an API caller may ask for
PAGE_LIMIT = 50
TAIL_POLL_SECONDS = 1  # the page polls a running tail this often
FILTER_CHARS = 1000
CURSOR_CHARS = 64 * 1024
Filter = Annotated[str, msgspec.Meta(max_length=FILTER_CHARS)]


class Filtered(msgspec.Struct):
    """What the browser and the tail read alike: the partition, the filters, the cut."""

    partition: Annotated[
        Annotated[int, msgspec.Meta(ge=0)] | None, doc("one partition (default: all)")
    ] = None
    key: Annotated[Filter, doc("message key, exactly")] = ""
    header: Annotated[Filter, doc("NAME (present) or NAME=VALUE")] = ""
    text: Annotated[Filter, doc("payload or headers contain (case-insensitive)")] = ""
    where: Annotated[
        Filter, doc('expression, e.g. payload.customer == "c-1" and payload.amount > 100')
    ] = ""
    max_bytes: Annotated[
        int,
        doc(
            f"payload bytes per message (default {ROW_PREVIEW_BYTES}, at most {MAX_ROW_BYTES})",
            ge=1,
            le=MAX_ROW_BYTES,
        ),
    ] = ROW_PREVIEW_BYTES

    def filters(self) -> Filters | None:
        return Filters.of(
            key=_given(self.key),
            header=_given(self.header),
            text=_given(self.text),
            expression=_given(self.where),
        )

    @property
    def partitions(self) -> list[int] | None:
        return None if self.partition is None else [self.partition]


class Browse(Filtered):
    """The browser's input."""

    order: Annotated[Literal["newest", "oldest"], doc("newest (default) or oldest first")] = (
        "newest"
    )
    from_id: Annotated[str, doc("start at this entry id (inclusive)", max_length=60)] = ""
    from_time: Annotated[
        str, doc("start at this time (epoch ms or ISO time, UTC)", max_length=40)
    ] = ""
    limit: Annotated[
        int,
        doc(f"messages per page (default {PAGE_LIMIT}, at most {MAX_LIMIT})", ge=1, le=MAX_LIMIT),
    ] = PAGE_LIMIT
    max_scan: Annotated[
        int,
        doc(
            f"entries scanned at most (default {DEFAULT_MAX_SCAN}, at most {MAX_SCAN})",
            ge=1,
            le=MAX_SCAN,
        ),
    ] = DEFAULT_MAX_SCAN
    cursor: Annotated[
        str, doc("next_cursor of the previous page of the same query", max_length=CURSOR_CHARS)
    ] = ""

    def query(self) -> BrowseQuery:
        from_time = self.from_time.strip()
        try:
            from_ms = parse_start_time(from_time) if from_time else None
        except ValueError as exc:
            raise ParamError(str(exc)) from None
        return BrowseQuery(
            partitions=self.partitions,
            order=self.order,
            from_id=_given(self.from_id),
            from_ms=from_ms,
            limit=self.limit,
            max_scan=self.max_scan,
            cursor=_given(self.cursor),
        )


class Tail(Filtered):
    """The live tail's input."""

    rate: Annotated[
        int,
        doc(
            f"messages a second shown (default {TAIL_RATE}, at most {MAX_TAIL_RATE}); "
            "the rest skipped and counted",
            ge=1,
            le=MAX_TAIL_RATE,
        ),
    ] = TAIL_RATE
    cursor: Annotated[
        str,
        doc(
            "the cursor of the previous poll (none: the tail opens at the newest entries)",
            max_length=CURSOR_CHARS,
        ),
    ] = ""
    paused: Annotated[bool, doc("hand the cursor back unread (a paused tail)")] = False


def _given(value: str) -> str | None:
    return value.strip() or None


def browse_get(cluster: str, topic: str, q: Browse, *, user: Any) -> dict[str, Any]:
    """One page of the topic as the ``--json`` document of ``mqcore browse`` (masked for
    users who may not see payloads; ``payload_masked`` says so)."""
    topic_visible_require(user, cluster, topic)
    query, filters = q.query(), q.filters()
    visible = payload_visible(user, cluster, topic)
    check_data_filter(filters is not None and filters.reads_data, visible=visible)
    requested, terms = query.max_scan, 0
    if filters is not None and filters.expression is not None:
        terms = filters.expression.terms
        budget = int(settings.BROWSE_EXPRESSION_BUDGET)
        query = replace(query, max_scan=filters.scan_within(requested, budget))
    page = browse_topic(clusters.admin(cluster), topic, query, filters)
    shown = [mask_message(m, visible=visible) for m in page.messages]
    return {
        **page_dict(page, q.max_bytes, shown),
        "payload_masked": not visible,
        "max_scan_requested": requested,
        "expression_terms": terms,
    }


def tail_get(cluster: str, topic: str, q: Tail, *, user: Any) -> dict[str, Any]:
    """One poll of the live tail (or its opening at now, without ``cursor``): the rows
    shown (newest first, masked as the browser's, payload cut to ``max_bytes``), the
    ``cursor`` of the next poll, ``skipped`` this poll and the running totals."""
    topic_visible_require(user, cluster, topic)
    filters = q.filters()
    visible = payload_visible(user, cluster, topic)
    check_data_filter(filters is not None and filters.reads_data, visible=visible)
    max_read = DEFAULT_MAX_SCAN
    if filters is not None:
        max_read = filters.scan_within(max_read, int(settings.BROWSE_EXPRESSION_BUDGET))
    poll = tail_topic(
        clusters.admin(cluster),
        topic,
        cursor=_given(q.cursor),
        partitions=q.partitions,
        rate=q.rate,
        filters=filters,
        max_read=max_read,
        hold=q.paused,
    )
    return {
        "topic": topic,
        "partitions": poll.partitions,
        "messages": [
            message_row(mask_message(m, visible=visible), q.max_bytes) for m in poll.messages
        ],
        "cursor": poll.cursor,
        "skipped": poll.skipped,
        "examined": poll.examined,
        "shown_total": poll.state.shown,
        "skipped_total": poll.state.skipped,
        "rate": q.rate,
        "paused": q.paused,
        "poll_seconds": TAIL_POLL_SECONDS,
        "payload_masked": not visible,
    }
