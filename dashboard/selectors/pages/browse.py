"""The topic message browser (page and API): query parameters in, a masked page out.

Parameters (the page's form and the API's query string alike): ``partition`` (empty:
all), ``order`` (newest, oldest), ``from_id`` or ``from_time`` (epoch ms, or an
ISO-8601 instant / the ``datetime-local`` value of the form, UTC), ``limit``,
``max_scan``, ``cursor``, and the filters ``key``, ``header`` (NAME or NAME=VALUE),
``text`` and ``where`` (the expression, :mod:`mqcore.browse.expr`); ``max_bytes`` of
payload per row. The scan is live from the MQ Redis and bounded (:mod:`mqcore.browse.scan`).
Users who may not see the topic's payloads get them masked, and filters that look into
payloads or header values are refused for them (as the DLQ's text search).

A ``where`` expression lowers ``max_scan`` to the CPU budget of
``BROWSE_EXPRESSION_BUDGET`` term evaluations a request (:meth:`Filters.scan_within`);
the page says so (``max_scan_requested``, ``expression_terms``, ``stopped_at_bound``)
and its cursor goes on from where the budget stopped it.

The live tail (:func:`tail_get`, :mod:`mqcore.browse.tail`) takes the same filters,
``partition`` and ``max_bytes``, masks the same way, and reads ``cursor`` (the previous
poll's; none: open at now), ``rate`` (messages a second shown, the rest skipped and
counted) and ``paused`` (the cursor checked and handed back, nothing read: a paused page).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from django.conf import settings

from dashboard import clusters
from dashboard.masking import check_data_filter, mask_message
from dashboard.permissions import payload_visible
from dashboard.selectors.pages.params import ParamError, parse_choice, parse_int
from dashboard.selectors.pages.snapshot import topic_visible_require
from mqcore.browse import BrowseQuery, Filters, browse_topic
from mqcore.browse.rows import ROW_PREVIEW_BYTES, message_row, page_dict, parse_start_time
from mqcore.browse.scan import DEFAULT_MAX_SCAN, MAX_LIMIT, MAX_SCAN, ORDERS
from mqcore.browse.tail import MAX_TAIL_RATE, TAIL_RATE, tail_topic

__all__ = [
    "BROWSE_PARAMS",
    "MAX_ROW_BYTES",
    "TAIL_PARAMS",
    "TAIL_POLL_SECONDS",
    "browse_get",
    "tail_get",
]

MAX_ROW_BYTES = 64 * 1024  # the most payload bytes per row an API caller may ask for
PAGE_LIMIT = 50
BROWSE_PARAMS = (
    "partition", "order", "from_id", "from_time", "limit", "max_scan", "cursor",
    "key", "header", "text", "where", "max_bytes",
)  # fmt: skip
TAIL_PARAMS = ("partition", "rate", "key", "header", "text", "where", "max_bytes")
TAIL_POLL_SECONDS = 1  # the page polls a running tail this often


def _text(params: Mapping[str, Any], name: str, limit: int = 1000) -> str | None:
    value = (params.get(name) or "").strip()
    if len(value) > limit:
        raise ParamError(f"{name} is longer than {limit} characters")
    return value or None


def _bounded(params: Mapping[str, Any], name: str, default: int, maximum: int) -> int:
    value = parse_int(params.get(name), name, default=default, minimum=1, maximum=maximum)
    return value or default


def _filters(params: Mapping[str, Any]) -> Filters | None:
    return Filters.of(
        key=_text(params, "key"),
        header=_text(params, "header"),
        text=_text(params, "text"),
        expression=_text(params, "where"),
    )


def _max_bytes(params: Mapping[str, Any]) -> int:
    value = parse_int(
        params.get("max_bytes"),
        "max_bytes",
        default=ROW_PREVIEW_BYTES,
        minimum=1,
        maximum=MAX_ROW_BYTES,
    )
    return value or ROW_PREVIEW_BYTES


def _query(params: Mapping[str, Any]) -> tuple[BrowseQuery, Filters | None, int]:
    partition = parse_int(params.get("partition"), "partition", default=None, minimum=0)
    from_time = _text(params, "from_time", 40)
    try:
        from_ms = parse_start_time(from_time) if from_time else None
    except ValueError as exc:
        raise ParamError(str(exc)) from None
    query = BrowseQuery(
        partitions=None if partition is None else [partition],
        order=parse_choice(params.get("order"), "order", ORDERS, "newest"),
        from_id=_text(params, "from_id", 60),
        from_ms=from_ms,
        limit=_bounded(params, "limit", PAGE_LIMIT, MAX_LIMIT),
        max_scan=_bounded(params, "max_scan", DEFAULT_MAX_SCAN, MAX_SCAN),
        cursor=_text(params, "cursor", 64 * 1024),
    )
    return query, _filters(params), _max_bytes(params)


def browse_get(cluster: str, topic: str, params: Mapping[str, Any], *, user: Any) -> dict[str, Any]:
    """One page of the topic as the ``--json`` document of ``mqcore browse`` (masked for
    users who may not see payloads; ``payload_masked`` says so)."""
    topic_visible_require(user, cluster, topic)
    query, filters, max_bytes = _query(params)
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
        **page_dict(page, max_bytes, shown),
        "payload_masked": not visible,
        "max_scan_requested": requested,
        "expression_terms": terms,
    }


def tail_get(
    cluster: str, topic: str, params: Mapping[str, Any], *, user: Any, paused: bool = False
) -> dict[str, Any]:
    """One poll of the live tail (or its opening at now, without ``cursor``): the rows
    shown (newest first, masked as the browser's, payload cut to ``max_bytes``), the
    ``cursor`` of the next poll, ``skipped`` this poll and the running totals."""
    topic_visible_require(user, cluster, topic)
    partition = parse_int(params.get("partition"), "partition", default=None, minimum=0)
    rate = _bounded(params, "rate", TAIL_RATE, MAX_TAIL_RATE)
    filters, max_bytes = _filters(params), _max_bytes(params)
    visible = payload_visible(user, cluster, topic)
    check_data_filter(filters is not None and filters.reads_data, visible=visible)
    max_read = DEFAULT_MAX_SCAN
    if filters is not None:
        max_read = filters.scan_within(max_read, int(settings.BROWSE_EXPRESSION_BUDGET))
    poll = tail_topic(
        clusters.admin(cluster),
        topic,
        cursor=_text(params, "cursor", 64 * 1024),
        partitions=None if partition is None else [partition],
        rate=rate,
        filters=filters,
        max_read=max_read,
        hold=paused,
    )
    return {
        "topic": topic,
        "partitions": poll.partitions,
        "messages": [
            message_row(mask_message(m, visible=visible), max_bytes) for m in poll.messages
        ],
        "cursor": poll.cursor,
        "skipped": poll.skipped,
        "examined": poll.examined,
        "shown_total": poll.state.shown,
        "skipped_total": poll.state.skipped,
        "rate": rate,
        "paused": paused,
        "poll_seconds": TAIL_POLL_SECONDS,
        "payload_masked": not visible,
    }
