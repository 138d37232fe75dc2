"""The export buttons of the topic (lag), pending and DLQ pages, and their API twins: "export
all matching" the page's filters as CSV or JSON, streamed, bounded, masked and audited by
:mod:`dashboard.services.exports`, which reads and checks the query (so its fields are text
here). A request from another site is refused before it counts against the user's exports."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from dashboard.operations.declare import Api, Call, Operation, Page, doc, route
from dashboard.permissions import Action
from dashboard.ratelimits import count_request
from dashboard.services.exports import check_same_origin, export_download

__all__ = ["OPERATIONS"]

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
        return export_download(c.request, kind, c.cluster, c.topic)

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


OPERATIONS = (
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
