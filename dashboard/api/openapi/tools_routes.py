"""The routes of a topic's everyday tools in the API description: exports ("export all
matching" of lag, pending, DLQ) and the per-partition view (skew, memory, hot keys)."""

from __future__ import annotations

from dashboard.api.openapi.route import DLQ_FILTERS, Route, route

__all__ = ["TOOLS_ROUTES", "TOOLS_TWINS"]

T = "/api/v1/clusters/{cluster}/topics/{topic}"
EXPORT = {
    "format": "csv (default) or json",
    "max_rows": "at most this many rows (default and ceiling: EXPORT_MAX_ROWS)",
}
NOTE = "; streamed, audited, masked as the pages; the filename and X-Export-Max-Rows name the limit"

TOOLS_ROUTES: tuple[Route, ...] = (
    route(
        "api-lag-export",
        "get",
        T + "/lag/export",
        "exports",
        "Viewer",
        "Export lag per group and partition (live read)" + NOTE,
        {**EXPORT, "group": "one group"},
    ),
    route(
        "api-pending-export",
        "get",
        T + "/pending/export",
        "exports",
        "Viewer",
        "Export every matching pending entry of a group (paged XPENDING)" + NOTE,
        {
            **EXPORT,
            "group": "consumer group (required)",
            "partition": "one partition",
            "consumer": "one consumer",
            "min_idle_ms": "idle at least (ms)",
            "min_idle_s": "idle at least (s)",
            "min_deliveries": "delivered at least",
        },
    ),
    route(
        "api-dlq-export-all",
        "get",
        T + "/dlq/export-all",
        "exports",
        "Viewer",
        "Export every matching dead letter, newest first" + NOTE,
        {**EXPORT, **DLQ_FILTERS},
    ),
)

# page URL name -> its API twin
TOOLS_TWINS: dict[str, str] = {
    "lag-export": "api-lag-export",
    "pending-export": "api-pending-export",
    "dlq-export-all": "api-dlq-export-all",
}
