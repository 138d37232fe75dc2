"""The pending page: one page of a group's pending entries, live from the MQ Redis."""

from __future__ import annotations

from typing import Any, Literal

import msgspec
from django.conf import settings

from dashboard import clusters
from dashboard.selectors.pages.params import (
    PAGE_SIZE,
    Order,
    Paged,
    ParamError,
    mq_refusals,
)
from dashboard.selectors.pages.snapshot import now_ms, topic_visible_require
from dashboard.selectors.pages.topic import known_group
from mqcore.models import PendingPage

__all__ = [
    "PendingSort",
    "pending_get",
    "pending_json",
    "pending_page_get",
    "poison_threshold",
]

PendingSort = Literal["idle", "count"]
PENDING_MAX_LIMIT = 500
# One request reads at most offset + limit entries into its heap and scans at most
# settings.PENDING_MAX_SCAN PEL entries; deeper pages need a narrower filter.
PENDING_MAX_OFFSET = 10_000


def poison_threshold() -> int:
    """Deliveries at which a pending entry is highlighted as poison (max_retries + 1)."""
    return int(settings.CONSOLE_POISON_DELIVERIES)


def pending_get(
    cluster: str,
    topic: str,
    group: str,
    *,
    user: Any,
    sort: PendingSort = "idle",
    order: Order = "desc",
    limit: int = PAGE_SIZE,
    offset: int = 0,
    consumer: str | None = None,
    partition: int | None = None,
    min_idle_ms: int | None = None,
    min_idle_s: int | None = None,
    min_deliveries: int | None = None,
) -> PendingPage:
    """One page of the group-wide PEL, sorted and filtered by mqcore (bounded scan; idle
    at least ``min_idle_ms``, else ``min_idle_s``: the page's unit, so its JSON link works)."""
    if min_idle_ms is None and min_idle_s is not None:
        min_idle_ms = min_idle_s * 1000
    topic_visible_require(user, cluster, topic)
    if not 1 <= limit <= PENDING_MAX_LIMIT:
        raise ParamError(f"limit must be between 1 and {PENDING_MAX_LIMIT}")
    if not 0 <= offset <= PENDING_MAX_OFFSET:
        raise ParamError(
            f"offset must be between 0 and {PENDING_MAX_OFFSET} (page {PENDING_MAX_OFFSET // limit}"
            " at most): narrow the list by consumer, partition, idle time or deliveries"
        )
    with mq_refusals(topic, group=group, partition=partition):
        return clusters.admin(cluster).pending(
            topic,
            group,
            sort=sort,
            order=order,
            limit=limit,
            offset=offset,
            consumer=consumer or None,
            partition=partition,
            min_idle_ms=min_idle_ms or 0,
            min_deliveries=min_deliveries or 0,
            max_scan=int(settings.PENDING_MAX_SCAN),
        )


def pending_page_get(
    cluster: str, topic: str, *, user: Any, group: str, page: int, **f: Any
) -> dict[str, Any]:
    """The pending page: the topic's groups, the one shown (default: the first), a page of
    its entries and the filters (consumer, partition, min_idle_s, min_deliveries)."""
    groups, group = known_group(cluster, topic, group, first=True)
    f["consumer"] = f["consumer"].strip()
    at, result = (page - 1) * PAGE_SIZE, None
    if group:
        result = pending_get(cluster, topic, group, user=user, limit=PAGE_SIZE, offset=at, **f)
    entries, total = (result.entries, result.total) if result else ([], 0)
    shown = ("consumer", "partition", "min_idle_s", "min_deliveries")
    return {
        "groups": groups,
        "group": group,
        "result": result,
        "now_ms": now_ms(),
        "paged": Paged(entries, page, PAGE_SIZE, total),
        "sort": f["sort"] or "idle",
        "order": f["order"] or "desc",
        "poison_at": poison_threshold(),
        "filters": {k: "" if f[k] is None else f[k] for k in shown},
    }


def pending_json(cluster: str, topic: str, *, group: str, **f: Any) -> dict[str, Any]:
    """The pending API's answer (group required)."""
    if not group:
        raise ParamError("group is required")
    result = pending_get(cluster, topic, group, **f)
    return {
        "topic": topic,
        "group": group,
        "sort": f["sort"] or "idle",
        "order": f["order"] or "desc",
        "limit": f["limit"],
        "offset": f["offset"],
        **msgspec.to_builtins(result, str_keys=True),
    }
