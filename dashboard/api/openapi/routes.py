"""Every ``/api/v1/`` route, described once: the table the OpenAPI document is built from.

A row: URL name, method, path (OpenAPI syntax), tag, role, summary, query parameters
(name -> description) and body fields (name -> (JSON type, description)). Only routes
not yet declared as operations (:mod:`dashboard.operations`) keep a row here: a migrated
area deletes its rows and twins.
"""

from __future__ import annotations

from dashboard.api.openapi.access_routes import ACCESS_ROUTES, ACCESS_TWINS
from dashboard.api.openapi.browse_routes import BROWSE_ROUTES, BROWSE_TWINS
from dashboard.api.openapi.payload_routes import PAYLOAD_ROUTES, PAYLOAD_TWINS
from dashboard.api.openapi.retry_routes import RETRY_ROUTES, RETRY_TWINS
from dashboard.api.openapi.route import DLQ_FILTERS, REASON, Route
from dashboard.api.openapi.route import route as _r
from dashboard.api.openapi.tools_routes import TOOLS_ROUTES, TOOLS_TWINS

__all__ = ["PAGE_TWINS", "ROUTES", "Route"]

C = "/api/v1/clusters/{cluster}"
T = C + "/topics/{topic}"
LIST = {"limit": "page size", "offset": "rows to skip"}
TARGET = {
    "force": ("boolean", "replay even when already replayed"),
    "target_topic": ("string", "replay to another topic (Admin)"),
    "target_partition": ("integer", "replay to another partition (Admin)"),
}
PENDING = {
    "group": ("string", "consumer group"),
    "partition": ("integer", "partition of the entries"),
    "ids": ("array", "pending entry ids"),
}


ROUTES: tuple[Route, ...] = (
    _r("api-openapi", "get", "/api/v1/openapi.json", "meta", "Viewer", "This document"),
    _r("api-clusters", "get", "/api/v1/clusters", "clusters", "Viewer", "Clusters and health"),
    _r(
        "api-overview",
        "get",
        C + "/overview",
        "clusters",
        "Viewer",
        "Cluster overview: topics with status, lag, pending, DLQ depth",
        {
            "page": "page number",
            "per_page": "rows per page",
            "sort": "sort column",
            "order": "asc or desc",
            "problems": "only topics with a problem (1)",
            "q": "topic name contains",
        },
    ),
    _r("api-topics", "get", C + "/topics", "topics", "Viewer", "Topics (paged)", LIST),
    _r(
        "api-topic-detail",
        "get",
        T,
        "topics",
        "Viewer",
        "One topic: groups (each with partitions and `drain`, the time-to-drain estimate: "
        "seconds, state, rate_per_s, reason, low_s, high_s, ranged), consumers, leases",
    ),
    _r(
        "api-topic-series",
        "get",
        T + "/series",
        "topics",
        "Viewer",
        "Time series of one metric",
        {"metric": "metric name", "window": "time window", "group": "consumer group"},
    ),
    _r("api-lag", "get", T + "/lag", "topics", "Viewer", "Lag per group and partition", LIST),
    _r(
        "api-pending",
        "get",
        T + "/pending",
        "pending",
        "Viewer",
        "Pending entries of a group (live read)",
        {
            **LIST,
            "group": "consumer group (required)",
            "partition": "one partition",
            "consumer": "one consumer",
            "min_idle_ms": "idle at least (ms)",
            "min_idle_s": "idle at least (s)",
            "min_deliveries": "delivered at least",
            "sort": "sort column",
            "order": "asc or desc",
        },
    ),
    _r(
        "api-pending-claim",
        "post",
        T + "/pending/claim",
        "pending",
        "Operator",
        "Claim pending entries of one partition to a consumer",
        body={**PENDING, "consumer": ("string", "consumer to claim to"), "reason": REASON},
    ),
    _r(
        "api-pending-move-to-dlq",
        "post",
        T + "/pending/move-to-dlq",
        "pending",
        "Operator",
        "Dead-letter pending entries of one partition",
        body={**PENDING, "reason": REASON},
    ),
    _r("api-leases", "get", T + "/leases", "topics", "Viewer", "Partition leases", {"group": ""}),
    _r(
        "api-message",
        "get",
        T + "/messages/{partition}/{entry_id}",
        "topics",
        "Viewer",
        "One message (payload masked without the right to see it; cut to max_bytes: "
        "payload_size, payload_truncated) and its trace: delivery per group, retries, DLQ",
        {"max_bytes": "payload bytes returned (default 65536, at most 4194304)"},
    ),
    _r(
        "api-dlq",
        "get",
        T + "/dlq",
        "dlq",
        "Viewer",
        "Dead letters, newest first",
        {**DLQ_FILTERS, "before": "cursor (next_cursor)", "limit": "page size (1..200)"},
    ),
    _r(
        "api-dlq-bulk-preview",
        "post",
        T + "/dlq/bulk",
        "replay jobs",
        "Operator",
        "Freeze letters into a draft bulk replay job (201) with its dry run",
        body={
            "ids": ("array", "letter ids, or"),
            "all": ("boolean", "every letter matching the filter fields"),
            **{k: ("string", v) for k, v in DLQ_FILTERS.items()},
            **TARGET,
        },
    ),
    _r(
        "api-dlq-job",
        "get",
        T + "/dlq/jobs/{job_id}",
        "replay jobs",
        "Viewer",
        "A bulk replay job: progress, and the dry run of a draft",
    ),
    _r(
        "api-dlq-job-start",
        "post",
        T + "/dlq/jobs/{job_id}/start",
        "replay jobs",
        "Operator",
        "Start a previewed job",
        body={
            "reason": REASON,
            "ticket": ("string", "ticket reference (instead of a reason)"),
            "rate_limit": ("integer", "letters per second, 0 = none"),
        },
    ),
    _r(
        "api-dlq-job-cancel",
        "post",
        T + "/dlq/jobs/{job_id}/cancel",
        "replay jobs",
        "Operator",
        "Cancel a job (stops at its next chunk)",
    ),
    _r("api-pipelines", "get", C + "/pipelines", "pipelines", "Viewer", "Pipelines"),
    _r(
        "api-pipeline-detail",
        "get",
        C + "/pipelines/{name}",
        "pipelines",
        "Viewer",
        "One pipeline and its checkpoints",
        {"before": "cursor", "limit": "page size"},
    ),
    _r("api-alerts", "get", "/api/v1/alerts", "alerts", "Viewer", "Open alerts", {"cluster": ""}),
    _r(
        "api-alert-mute",
        "post",
        "/api/v1/alerts/mute",
        "alerts",
        "Admin",
        "Silence or acknowledge an alert",
        body={
            "cluster": ("string", "cluster"),
            "alert": ("string", "alert id"),
            "kind": ("string", "silence or ack"),
            "duration": ("string", "15m, 1h, ..."),
            "reason": REASON,
        },
    ),
    _r(
        "api-alert-unmute",
        "post",
        "/api/v1/alerts/unmute",
        "alerts",
        "Admin",
        "Lift a silence or acknowledgement",
        body={"cluster": ("string", "cluster"), "alert": ("string", "alert id"), "reason": REASON},
    ),
    _r("api-collectors", "get", "/api/v1/collectors", "ops", "Viewer", "Collector health"),
    _r(
        "api-audit",
        "get",
        "/api/v1/audit",
        "audit",
        "Viewer",
        "Audit log, newest first",
        {
            "actor": "",
            "action": "",
            "topic": "",
            "since": "",
            "until": "",
            "before": "id cursor",
            "limit": "",
        },
    ),
    _r("api-audit-verify", "get", "/api/v1/audit/verify", "audit", "Viewer", "Audit chain check"),
    *ACCESS_ROUTES,
    *BROWSE_ROUTES,
    *TOOLS_ROUTES,
    *RETRY_ROUTES,
    *PAYLOAD_ROUTES,
)

# Page URL name -> its API twin (the suite fails on a page missing here).
PAGE_TWINS: dict[str, str] = {
    "home": "api-clusters",
    "overview": "api-overview",
    "topic-detail": "api-topic-detail",
    "pending": "api-pending",
    "leases": "api-leases",
    "message-detail": "api-message",
    "pending-claim": "api-pending-claim",
    "pending-move-to-dlq": "api-pending-move-to-dlq",
    "dlq": "api-dlq",
    "dlq-bulk-preview": "api-dlq-bulk-preview",
    "dlq-job": "api-dlq-job",
    "dlq-job-progress": "api-dlq-job",
    "dlq-job-start": "api-dlq-job-start",
    "dlq-job-cancel": "api-dlq-job-cancel",
    "pipelines": "api-pipelines",
    "pipeline-detail": "api-pipeline-detail",
    "alerts": "api-alerts",
    "alert-mute": "api-alert-mute",
    "alert-unmute": "api-alert-unmute",
    "collectors": "api-collectors",
    "audit": "api-audit",
    "audit-export-csv": "api-audit",
    "audit-export-json": "api-audit",
    "audit-verify": "api-audit-verify",
    **ACCESS_TWINS,
    **BROWSE_TWINS,
    **TOOLS_TWINS,
    **RETRY_TWINS,
    **PAYLOAD_TWINS,
}
