"""Every ``/api/v1/`` route, described once: the table the OpenAPI document is built from.

A row: URL name, method, path (OpenAPI syntax), tag, role, summary, query parameters
(name -> description) and body fields (name -> (JSON type, description)). Keep it in
step with the URL patterns; the suite fails on a route missing here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["PAGE_TWINS", "ROUTES", "Route"]

C = "/api/v1/clusters/{cluster}"
T = C + "/topics/{topic}"
LIST = {"limit": "page size", "offset": "rows to skip"}
DLQ_FILTERS = {
    "text": "payload text contains",
    "partition": "source partition",
    "key": "message key",
    "since": "dead-lettered at or after (epoch ms or ISO time)",
    "until": "dead-lettered before (epoch ms or ISO time)",
}
REASON = ("string", "why (recorded in the audit log)")
TARGET = {
    "force": ("boolean", "replay even when already replayed"),
    "target_topic": ("string", "replay to another topic (Admin)"),
    "target_partition": ("integer", "replay to another partition (Admin)"),
}
POSITION = {
    "target": ("object", '{"kind": "latest|earliest|time|id", "value": ...}'),
    "partitions": ("array", 'partition numbers, or "all"'),
}
RULES_BODY = {
    "maxlen": ("integer", "keep at most this many entries per partition"),
    "max_age": ("string", "delete entries older than, e.g. 7d"),
    "consumed": ("boolean", "delete entries every group read and acked"),
    "ignore_groups": ("array", "groups whose unread entries may go (comma-separated in a query)"),
}
RULES_QUERY = {name: f"what-if: {text}" for name, (_type, text) in RULES_BODY.items()}
PENDING = {
    "group": ("string", "consumer group"),
    "partition": ("integer", "partition of the entries"),
    "ids": ("array", "pending entry ids"),
}


@dataclass(frozen=True)
class Route:
    name: str
    method: str
    path: str
    tag: str
    role: str
    summary: str
    query: dict[str, str] = field(default_factory=dict)
    body: dict[str, tuple[str, str]] = field(default_factory=dict)


def _r(*args: Any, **kwargs: Any) -> Route:
    return Route(*args, **kwargs)


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
        "One message (payload masked without the right to see it)",
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
        "api-dlq-letter",
        "get",
        T + "/dlq/{dlq_id}",
        "dlq",
        "Viewer",
        "One dead letter with its replay history and follow-ups",
    ),
    _r(
        "api-dlq-replay",
        "post",
        T + "/dlq/{dlq_id}/replay",
        "dlq",
        "Operator",
        "Replay one letter",
        body={"reason": REASON, **TARGET},
    ),
    _r(
        "api-dlq-delete",
        "post",
        T + "/dlq/{dlq_id}/delete",
        "dlq",
        "Admin",
        "Delete one letter",
        body={"reason": REASON},
    ),
    _r(
        "api-dlq-purge",
        "post",
        T + "/dlq/purge",
        "dlq",
        "Admin",
        "Purge the topic's whole DLQ",
        body={"confirm": ("string", "the topic name, typed again"), "reason": REASON},
    ),
    _r(
        "api-dlq-export",
        "post",
        T + "/dlq/export",
        "dlq",
        "Viewer",
        "Export letters as JSON (audited)",
        body={"ids": ("array", "letter ids")},
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
    _r(
        "api-group-position-plan",
        "post",
        T + "/groups/{group}/position/plan",
        "groups",
        "Admin",
        "Dry run of a group position move",
        body=POSITION,
    ),
    _r(
        "api-group-position",
        "post",
        T + "/groups/{group}/position",
        "groups",
        "Admin",
        "Move a group's position (skip or reprocess)",
        body={
            **POSITION,
            "reason": REASON,
            "confirm": ("string", "the group name, typed again"),
        },
    ),
    _r(
        "api-topic-retention",
        "get",
        T + "/retention",
        "retention",
        "Viewer",
        "Per partition: group floors and what each retention rule would delete next",
        {**RULES_QUERY, "page": "32 partitions a page"},
    ),
    _r(
        "api-topic-retention-trim",
        "post",
        T + "/retention/trim",
        "retention",
        "Admin",
        "Trim the topic's partitions now (never past a group's unread entries)",
        body={**RULES_BODY, "reason": REASON, "confirm": ("string", "the topic name, again")},
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
    _r(
        "api-timeline",
        "get",
        C + "/timeline",
        "timeline",
        "Viewer",
        "Incident timeline, newest first",
        {
            "topic": "one topic",
            "kind": "event kinds (repeated or comma-separated)",
            "group": "one group",
            "since": "from (epoch ms or ISO time)",
            "until": "to (epoch ms or ISO time)",
            "limit": "1..500",
            "before": "next_before of the previous answer",
        },
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
    "dlq-letter": "api-dlq-letter",
    "dlq-replay": "api-dlq-replay",
    "dlq-delete": "api-dlq-delete",
    "dlq-purge": "api-dlq-purge",
    "dlq-export": "api-dlq-export",
    "dlq-bulk-preview": "api-dlq-bulk-preview",
    "dlq-job": "api-dlq-job",
    "dlq-job-progress": "api-dlq-job",
    "dlq-job-start": "api-dlq-job-start",
    "dlq-job-cancel": "api-dlq-job-cancel",
    "group-position": "api-group-position-plan",
    "group-position-plan": "api-group-position-plan",
    "group-position-move": "api-group-position",
    "timeline": "api-timeline",
    "topic-retention": "api-topic-retention",
    "topic-retention-trim": "api-topic-retention-trim",
    "topic-timeline": "api-timeline",
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
}
