"""The retry browser's routes of the API description (reads: Viewer; actions: Operator)."""

from __future__ import annotations

from dashboard.api.openapi.route import REASON, Route, route

__all__ = ["RETRY_ROUTES", "RETRY_TWINS"]

C = "/api/v1/clusters/{cluster}"
T = C + "/topics/{topic}/retries"
FILTERS = {
    "state": "all, due (due now) or scheduled (later)",
    "order": "asc (soonest due first) or desc",
    "key": "message key",
    "text": "payload or header text contains (refused where payloads are masked)",
    "partition": "the item's partition",
}
ACTION_BODY = {
    "ids": ("array", "retry item ids"),
    "all_matching": ("boolean", "act on every item matching filter (10000 per call)"),
    "filter": ("object", "state, order, key, text, partition (as the list's query)"),
    "cursor": ("string", "continue an all_matching run after its next_cursor"),
    "reason": REASON,
}

RETRY_ROUTES: tuple[Route, ...] = (
    route(
        "api-retries",
        "get",
        C + "/retries",
        "retries",
        "Viewer",
        "Topics with their retry counts and next due time (latest snapshot)",
    ),
    route(
        "api-topic-retries",
        "get",
        T,
        "retries",
        "Viewer",
        "A page of the topic's retry items by due time",
        {
            **FILTERS,
            "limit": "1..500",
            "cursor": "next_cursor of the previous page",
            "offset": "items to skip (unfiltered lists)",
        },
    ),
    route(
        "api-topic-retries-retry",
        "post",
        T + "/retry",
        "retries",
        "Operator",
        "Put retry items back on their partitions now",
        body=ACTION_BODY,
    ),
    route(
        "api-topic-retries-delete",
        "post",
        T + "/delete",
        "retries",
        "Operator",
        "Delete retry items (the messages are lost)",
        body={**ACTION_BODY, "confirm": ("string", "the topic name, to delete all matching")},
    ),
)

RETRY_TWINS: dict[str, str] = {
    "retries": "api-retries",
    "topic-retries": "api-topic-retries",
    "topic-retries-retry": "api-topic-retries-retry",
    "topic-retries-delete": "api-topic-retries-delete",
}
