"""The pending page: one page of a group's pending entries, live from the MQ Redis."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from dashboard import clusters
from dashboard.selectors.pages.params import (
    ORDERS,
    PAGE_SIZE,
    NotFoundError,
    ParamError,
    parse_choice,
)
from dashboard.selectors.pages.snapshot import topic_visible_require
from mqcore.errors import (
    InvalidArgumentError,
    UnknownGroupError,
    UnknownPartitionError,
    UnknownTopicError,
)
from mqcore.models import PendingPage

__all__ = ["PENDING_SORTS", "pending_get", "poison_threshold"]

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
    try:
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
    except UnknownTopicError:
        raise NotFoundError(f"unknown topic {topic!r}") from None
    except UnknownGroupError:
        raise NotFoundError(f"unknown group {group!r} of topic {topic!r}") from None
    except UnknownPartitionError:
        raise ParamError(f"partition {partition} does not exist") from None
    except InvalidArgumentError as exc:
        raise ParamError(str(exc)) from None
