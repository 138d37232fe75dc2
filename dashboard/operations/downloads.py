"""The files the console serves, rate-limited as exports. The raw bytes of one payload (a
value too large to show, or past a page's decode budget) of a dead letter, a retry item or
an entry: for who may see the topic's payloads (a masked viewer 403), bounded, an
``application/octet-stream`` attachment with ``nosniff``
(:mod:`dashboard.selectors.payloads`). And the export buttons of the topic (lag), pending
and DLQ pages with their API twins: "export all matching" the page's filters as CSV or
JSON, streamed, bounded, masked and audited by :mod:`dashboard.services.exports`, which
reads and checks the query (so its fields are text here). A request from another site is
refused before it counts against the user's exports."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from dashboard.operations.declare import Api, Call, Operation, Page, doc, route
from dashboard.operations.dlq import LETTER
from dashboard.operations.topic import MESSAGE
from dashboard.permissions import Action
from dashboard.ratelimits import count_request, rate_limited
from dashboard.selectors.payloads import download_response, raw_payload_get
from dashboard.services.exports import check_same_origin, export_download

__all__ = ["OPERATIONS"]

REFS = {"dlq": "dlq_id", "retry": "item_id", "message": "entry_id"}  # the URL's value of each
NOTE = "; streamed, audited, masked as the pages; the filename and X-Export-Max-Rows name the limit"
EXPORT = {"format": "csv (default) or json", "max_rows": "at most (and by default) EXPORT_MAX_ROWS"}
PEL = {
    "partition": "one partition",
    "consumer": "one consumer",
    "min_deliveries": "at least",
    "min_idle_ms": "idle at least (ms)",
    "min_idle_s": "idle at least (s)",
}
DLQ = {
    "text": "payload text contains",
    "partition": "source partition",
    "key": "message key",
    "since": "dead-lettered at or after (epoch ms or ISO time)",
    "until": "dead-lettered before (epoch ms or ISO time)",
}


def _export(name: str, summary: str, **query: str) -> Operation:
    """The export ``<kind>-<rest>`` (lag, pending or dlq) at ``<kind>/<rest>/`` of the topic,
    its query's fields described by ``query``."""
    kind, _, rest = name.partition("-")
    fields = [(k, Annotated[str, doc(v)], "") for k, v in query.items()]
    struct = msgspec.defstruct(name.title().replace("-", ""), fields)

    def run(c: Call[Any]) -> Any:
        check_same_origin(c.request)  # refused before it counts against the user's exports
        count_request(c.request, "export")
        return export_download(c.request, c.actor, kind)

    return Operation(
        summary + NOTE,
        "exports",
        Action.VIEW,
        struct,
        run,
        early=False,
        page=Page(name, route(f"{kind}/{rest}")),
        api=Api(csv=True),
    )


def _payload(name: str, tag: str, kind: str, of: str, summary: str) -> Operation:
    """At ``payload/`` under the route ``of`` the letter, item or entry (a regex: ``^...``)."""

    def run(c: Call[Any]) -> Any:
        where = {"partition": c.url.get("partition", 0), "cluster": c.cluster, "topic": c.topic}
        return download_response(
            raw_payload_get(user=c.user, kind=kind, ref=c.url[REFS[kind]], **where)
        )

    return Operation(
        summary + "; on a sensitive topic, needs view payloads",
        tag,
        Action.VIEW,
        run=run,
        page=Page(name, of + "payload/" + ("$" if of.startswith("^") else "")),
        decorators=(rate_limited("export"),),
    )


OPERATIONS = (
    _payload(
        "dlq-letter-payload",
        "dlq",
        "dlq",
        LETTER,
        "A dead letter's payload as stored (bytes, an attachment; for one too large to show)",
    ),
    _payload(
        "retry-item-payload",
        "retries",
        "retry",
        route("retries/<str:item_id>"),
        "A retry item's payload as stored (bytes, an attachment; for one too large to show)",
    ),
    _payload(
        "message-payload",
        "topics",
        "message",
        MESSAGE,
        "An entry's payload as stored, out-of-line ones included (bytes, an attachment)",
    ),
    _export(
        "lag-export",
        "Export lag per group and partition (live read)",
        **EXPORT,
        group="one group",
    ),
    _export(
        "pending-export",
        "Export every matching pending entry of a group (paged XPENDING)",
        **EXPORT,
        group="consumer group (required)",
        **PEL,
    ),
    _export(
        "dlq-export-all",
        "Export every matching dead letter, newest first",
        **EXPORT,
        **DLQ,
    ),
)
