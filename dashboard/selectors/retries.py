"""The retry browser's reads: the topics with retry backlogs, a page of one topic's items.

The topic list comes from the collector's snapshot (retry count, next due); a page of
items is a live, bounded read of the MQ Redis (:mod:`mqcore.retries`). Everything
returned is view-ready and *untrusted*: templates escape it. Payloads and header values
of sensitive topics are masked (:mod:`dashboard.masking`) before they leave this module,
and a text filter on such a topic is refused; topics the user may not see are absent
from the list and answer 404 like an unknown topic.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

import msgspec

from dashboard import clusters
from dashboard.masking import MASK, check_text_filter, mask_headers
from dashboard.permissions import payload_visible, topic_visible
from dashboard.selectors.dlq import ERROR_HEADER_PREFIXES
from dashboard.selectors.pages.params import ParamError, convert, doc
from dashboard.selectors.pages.snapshot import snapshot_get, topic_visible_require
from mqcore.clock import iso_from_ms
from mqcore.errors import InvalidArgumentError
from mqcore.retries import MAX_LIMIT, RetryFilter, RetryItem

__all__ = [
    "DETAIL_CHARS",
    "FILTERS",
    "PAGE_LIMIT",
    "PREVIEW_CHARS",
    "RetryPage",
    "item_json",
    "retries_overview_get",
    "retries_page_get",
]

PREVIEW_CHARS = 120
DETAIL_CHARS = 4096
HEX_BYTES = 64
PAGE_LIMIT = 50
MAX_DUE_MS = 253402300799999  # 9999-12-31: a later (or infinite) score is shown as that
MAX_PARTITION = 2**31 - 1
MAX_OFFSET = 10_000_000
FILTER_CHARS = 200  # of a key or text filter (the rest is cut off)
FILTERS = ("state", "order", "key", "text", "partition")


class RetryPage(msgspec.Struct):
    """A page of one topic's retry items: the filter (none given: all, soonest first), then
    the paging."""

    state: Annotated[
        Literal["all", "due", "scheduled"] | None,
        doc("all (default), due (due now) or scheduled (later)"),
    ] = None
    order: Annotated[
        Literal["asc", "desc"] | None, doc("asc (default: soonest due first) or desc")
    ] = None
    key: Annotated[str, doc(f"message key (its first {FILTER_CHARS} characters)")] = ""
    text: Annotated[
        str, doc("payload or header text contains (refused where payloads are masked)")
    ] = ""
    partition: Annotated[
        Annotated[int, msgspec.Meta(ge=0, le=MAX_PARTITION)] | None, doc("the item's partition")
    ] = None
    limit: Annotated[
        int, doc(f"items per page (default {PAGE_LIMIT}, at most {MAX_LIMIT})", ge=1, le=MAX_LIMIT)
    ] = PAGE_LIMIT
    cursor: Annotated[str, doc("next_cursor of the previous page")] = ""
    offset: Annotated[int, doc("items to skip (unfiltered lists)", ge=0, le=MAX_OFFSET)] = 0

    def given(self) -> dict[str, str]:
        """The filter's given fields as text (the page's form, the JSON's ``filters``)."""
        values = {k: getattr(self, k) for k in FILTERS}
        return {k: str(v).strip()[:FILTER_CHARS] for k, v in values.items() if v not in (None, "")}

    def filter(self) -> RetryFilter:
        given = self.given()
        try:
            return RetryFilter(
                **{k: given[k] for k in ("state", "order") if k in given},
                key=given.get("key") or None,
                text=given.get("text") or None,
                partition=self.partition,
            )
        except InvalidArgumentError as exc:
            raise ParamError(str(exc)) from None

    @classmethod
    def read_filter(cls, values: Mapping[str, Any]) -> RetryFilter:
        """A write's ``filter`` (a form's or a JSON object's values, text or numbers) read as
        the page reads its own (ParamError on bad input)."""
        text = {k: str(values[k]).strip() for k in FILTERS if values.get(k) is not None}
        given = {k: v for k, v in text.items() if v}
        return convert(given, cls, strict=False).filter()


def item_json(item: RetryItem, *, visible: bool, now_ms: int) -> dict[str, Any]:
    """One item as pages and the API show it (masked for whom it must be): a preview, and
    the payload up to :data:`DETAIL_CHARS`."""
    binary = item.payload_bytes is not None
    text = "" if binary else item.payload
    headers = mask_headers(item.headers, visible=visible)
    errors = {k: v for k, v in headers.items() if k.lower().startswith(ERROR_HEADER_PREFIXES)}
    due = min(max(item.due_ms, 0), MAX_DUE_MS)
    hexed = item.payload_bytes[:HEX_BYTES].hex(" ") if visible and item.payload_bytes else None
    return {
        "id": item.id,
        "actionable": item.actionable,
        "due_ms": item.due_ms,
        "due_at": iso_from_ms(due),
        "due": item.due_ms <= now_ms,
        "topic": item.item_topic,
        "partition": item.partition,
        "retry_count": item.retry_count,
        "max_retries": item.max_retries,
        "key": item.key,
        "original_id": item.original_id,
        "headers": headers,
        "error_headers": errors,
        "preview": (text[:PREVIEW_CHARS] if visible else MASK),
        "payload": (text[:DETAIL_CHARS] if visible else MASK),
        "payload_hex": hexed,
        "payload_size": item.payload_size,
        "truncated": visible and (len(text) > DETAIL_CHARS or binary),
        "binary": binary,
        "masked": not visible,
        "encoding": item.encoding,
        "problem": item.problem,
        # the payload kept undecoded (too large, page budget): raw bytes through the download
        "undecoded": item.undecoded.as_dict() if item.undecoded is not None else None,
    }


def retries_overview_get(*, user: Any, cluster: str) -> dict[str, Any]:
    """The visible topics of the latest snapshot with their retry counts (busiest first)."""
    snap = snapshot_get(cluster)
    rows: list[dict[str, Any]] = []
    for t in snap.topics if snap is not None else ():
        if not topic_visible(user, cluster, t.topic):
            continue
        nxt = t.retry.next_due_at_ms
        rows.append(
            {
                "topic": t.topic,
                "count": t.retry.count,
                "next_due_ms": nxt,
                "next_due_at": None if nxt is None else iso_from_ms(min(max(nxt, 0), MAX_DUE_MS)),
            }
        )
    rows.sort(key=lambda r: (-r["count"], r["topic"]))
    return {"topics": rows, "snapshot": snap is not None}


def retries_page_get(*, user: Any, cluster: str, topic: str, query: RetryPage) -> dict[str, Any]:
    """One page of ``topic``'s retry items for ``query``."""
    topic_visible_require(user, cluster, topic)
    flt = query.filter()
    visible = payload_visible(user, cluster, topic)
    check_text_filter(flt.text, visible=visible)
    cursor = query.cursor.strip() or None
    try:
        page = clusters.retry_set(cluster).page(
            topic, flt=flt, limit=query.limit, cursor=cursor, offset=query.offset
        )
    except InvalidArgumentError as exc:
        raise ParamError(str(exc)) from None
    return {
        "topic": topic,
        "items": [item_json(i, visible=visible, now_ms=page.now_ms) for i in page.items],
        "next_cursor": page.next_cursor,
        "scanned": page.scanned,
        "complete": page.complete,
        "total": page.total,
        "due": page.due,
        "scheduled": page.total - page.due,
        "now_ms": page.now_ms,
        "masked": not visible,
        "filters": query.given(),
    }
