"""The pending page: one page of a group's pending entries, live from the MQ Redis."""

from __future__ import annotations

from typing import Any

import msgspec
from django.conf import settings

from dashboard import clusters
from dashboard.selectors.pages.params import (
    ORDERS,
    PAGE_SIZE,
    Paged,
    ParamError,
    mq_refusals,
    parse_choice,
)
from dashboard.selectors.pages.snapshot import now_ms, topic_visible_require
from dashboard.selectors.pages.topic import known_group
from mqcore.models import PendingPage

__all__ = ["PENDING_SORTS", "pending_get", "pending_json", "pending_page_get", "poison_threshold"]

PENDING_SORTS = ("idle", "count")
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
    sort: str = "idle",
    order: str = "desc",
    limit: int = PAGE_SIZE,
    offset: int = 0,
    consumer: str | None = None,
    partition: int | None = None,
    min_idle_ms: int | None = None,
    min_deliveries: int | None = None,
) -> PendingPage:
    """One page of the group-wide PEL, sorted and filtered by mqcore (bounded scan)."""
    topic_visible_require(user, cluster, topic)
    sort = parse_choice(sort, "sort", PENDING_SORTS, "idle")
    order = parse_choice(order, "order", ORDERS, "desc")
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
    cluster: str, topic: str, *, user: Any, group: str, page: int, consumer: str, sort: str,
    order: str, partition: int | None, min_idle_s: int | None, min_deliveries: int | None,
) -> dict[str, Any]:  # fmt: skip
    """The pending page: the topic's groups, the one shown (default: the first) and a page
    of its entries (``min_idle_s``: seconds)."""
    groups, group = known_group(cluster, topic, group, first=True)
    consumer = consumer.strip()
    f = {"consumer": consumer, "partition": partition, "min_idle_s": min_idle_s,
         "min_deliveries": min_deliveries}  # fmt: skip
    idle = None if min_idle_s is None else min_idle_s * 1000
    result = None if not group else pending_get(
        cluster, topic, group, user=user, sort=sort, order=order, limit=PAGE_SIZE,
        offset=(page - 1) * PAGE_SIZE, consumer=consumer, partition=partition,
        min_idle_ms=idle, min_deliveries=min_deliveries)  # fmt: skip
    entries, total = (result.entries, result.total) if result else ([], 0)
    return {"groups": groups, "group": group, "result": result, "now_ms": now_ms(),
            "paged": Paged(entries, page, PAGE_SIZE, total), "sort": sort or "idle",
            "order": order or "desc", "filters": {k: "" if v is None else v for k, v in f.items()},
            "poison_at": poison_threshold()}  # fmt: skip


def pending_json(
    cluster: str,
    topic: str,
    *,
    group: str,
    min_idle_s: int | None,
    min_idle_ms: int | None,
    **f: Any,
) -> dict[str, Any]:
    """The pending API's answer (group required; ``min_idle_s``, the page's unit, when no
    ``min_idle_ms``, so the page's JSON link works)."""
    if not group:
        raise ParamError("group is required")
    if min_idle_ms is None and min_idle_s is not None:
        min_idle_ms = min_idle_s * 1000
    result = pending_get(cluster, topic, group, min_idle_ms=min_idle_ms, **f)
    return {"topic": topic, "group": group, "sort": f["sort"] or "idle",
            "order": f["order"] or "desc", "limit": f["limit"], "offset": f["offset"],
            **msgspec.to_builtins(result, str_keys=True)}  # fmt: skip
