"""The topic message browser and "produce a test message" routes of the API description."""

from __future__ import annotations

from dashboard.api.openapi.route import Route, route

__all__ = ["BROWSE_ROUTES", "BROWSE_TWINS"]

M = "/api/v1/clusters/{cluster}/topics/{topic}/messages"

BROWSE_ROUTES: tuple[Route, ...] = (
    route(
        "api-topic-browse",
        "get",
        M,
        "topics",
        "Viewer",
        "Browse messages: partitions merged by id, filters, cursor paging, a bounded scan "
        "(scanned, stopped_at_bound; payloads masked without the right to see them)",
        {
            "partition": "one partition (default: all)",
            "order": "newest (default) or oldest first",
            "from_id": "start at this entry id (inclusive)",
            "from_time": "start at this time (epoch ms or ISO time, UTC)",
            "limit": "messages per page (default 50, at most 500)",
            "max_scan": "entries scanned at most (default 10000, at most 100000)",
            "cursor": "next_cursor of the previous page of the same query",
            "key": "message key, exactly",
            "header": "NAME (present) or NAME=VALUE",
            "text": "payload or headers contain (case-insensitive)",
            "where": 'expression, e.g. payload.customer == "c-1" and payload.amount > 100',
            "max_bytes": "payload bytes per message (default 1024, at most 65536)",
        },
    ),
    route(
        "api-topic-produce",
        "post",
        M + "/produce",
        "topics",
        "Operator",
        "Produce a test message (validated as mqcore produce; audited)",
        body={
            "payload": ("string", "the message"),
            "key": ("string", "optional message key (chooses the partition)"),
            "headers": ("object", "optional headers, name -> string value"),
            "partition": ("integer", "optional partition"),
        },
    ),
)

BROWSE_TWINS: dict[str, str] = {
    "topic-browse": "api-topic-browse",
    "topic-produce": "api-topic-produce",
}
