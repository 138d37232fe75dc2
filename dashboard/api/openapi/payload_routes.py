"""The payload downloads' routes of the API description (who may see the payloads)."""

from __future__ import annotations

from dashboard.api.openapi.route import Route, route

__all__ = ["PAYLOAD_ROUTES", "PAYLOAD_TWINS"]

T = "/api/v1/clusters/{cluster}/topics/{topic}"
WHO = "Viewer (view payloads on a sensitive topic)"

PAYLOAD_ROUTES: tuple[Route, ...] = (
    route(
        "api-dlq-letter-payload",
        "get",
        T + "/dlq/{dlq_id}/payload",
        "dlq",
        WHO,
        "A dead letter's payload as stored (bytes, an attachment; for one too large to show)",
    ),
    route(
        "api-retry-item-payload",
        "get",
        T + "/retries/{item_id}/payload",
        "retries",
        WHO,
        "A retry item's payload as stored (bytes, an attachment; for one too large to show)",
    ),
    route(
        "api-message-payload",
        "get",
        T + "/messages/{partition}/{entry_id}/payload",
        "topics",
        WHO,
        "An entry's payload as stored, out-of-line ones included (bytes, an attachment)",
    ),
)

PAYLOAD_TWINS: dict[str, str] = {
    "dlq-letter-payload": "api-dlq-letter-payload",
    "retry-item-payload": "api-retry-item-payload",
    "message-payload": "api-message-payload",
}
