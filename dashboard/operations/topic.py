"""One topic's read pages and their JSON (``mqcore`` CLI ``--json`` field names where they
overlap): the topic (snapshot, charts), its series and live lag, a group's pending entries,
the leases, and one message (masked without the right to see its payload)."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import Meta

from dashboard.charts import WINDOWS
from dashboard.operations.declare import FORM_TRUE, Api, Call, Operation, Page, api_path, doc, route
from dashboard.permissions import Action, has_action
from dashboard.selectors.pages import leases, messages, pending, series
from dashboard.selectors.pages import topic as sel
from dashboard.selectors.pages.snapshot import now_ms

__all__ = ["OPERATIONS"]

PAGE = route()
API = api_path(PAGE)
MESSAGE = PAGE + "messages/<int:partition>/<str:entry_id>/"
AtLeast = Annotated[int, Meta(ge=0)] | None


class GroupFilter(msgspec.Struct):
    group: Annotated[str, doc("one consumer group")] = ""


class SeriesQuery(GroupFilter):
    metric: Annotated[str, doc(", ".join(series.SERIES_METRICS))] = ""
    window: Annotated[str, doc(", ".join(WINDOWS) + " (default 1h)")] = ""


class Pel(GroupFilter):
    """Filters and order of a group's pending entries (min_*: at least)."""

    consumer: str = ""
    partition: AtLeast = None
    min_idle_s: AtLeast = None
    min_deliveries: AtLeast = None
    sort: Annotated[str, doc("idle (default) or count")] = ""
    order: Annotated[str, doc("desc (default) or asc")] = ""


class PelPage(Pel):
    page: Annotated[int, Meta(ge=1)] = 1


class PelQuery(Pel):
    min_idle_ms: AtLeast = None
    limit: Annotated[int, Meta(ge=1, le=500)] = 50
    offset: Annotated[int, Meta(ge=0)] = 0


class MessageCut(msgspec.Struct):
    max_bytes: Annotated[
        int, doc("payload bytes returned", ge=1, le=messages.MAX_PREVIEW_BYTES)
    ] = messages.PREVIEW_BYTES


def _topic_page(c: Call[Any], t: Any) -> dict[str, Any]:
    window = c.request.GET.get("window") or "1h"
    polled = getattr(c.request, "htmx", False)
    return sel.topic_page(c.cluster, t, user=c.user, window=window, polled=polled) | {"can": c.can}


def _leases_page(c: Call[GroupFilter], d: dict[str, Any]) -> dict[str, Any]:
    groups = sel.group_list(c.cluster, c.topic)
    return {"groups": groups, "d": d, "group": d["group"] or "", "now_ms": now_ms()}


def _pending_page(c: Call[PelPage], d: dict[str, Any]) -> dict[str, Any]:
    return d | {"can_act": has_action(c.user, Action.CLAIM, cluster=c.cluster, topic=c.topic)}


def _message_page(c: Call[MessageCut], v: messages.MessageView) -> dict[str, Any]:
    query = c.request.GET
    return v.page(full=query.get("full", "") in FORM_TRUE, group=query.get("group", ""))


OPERATIONS = (
    Operation(
        "One topic: groups (each with partitions and `drain`, the time-to-drain estimate: "
        "seconds, state, rate_per_s, reason, low_s, high_s, ranged), consumers, leases",
        "topics",
        Action.VIEW,
        run=lambda c: sel.topic_get(c.cluster, c.topic, user=c.user),
        page=Page(
            "topic-detail",
            PAGE,
            template="dashboard/topic.html#live",
            context=_topic_page,
        ),
        api=Api(answer=lambda c, t: sel.topic_json(c.cluster, t)),
    ),
    Operation(
        "Time series of one metric (partition_lag: the most lagging partitions)",
        "topics",
        Action.VIEW,
        SeriesQuery,
        lambda c: series.series_get(**c.read()),
        api=Api("api-topic-series", API + "/series"),
    ),
    Operation(
        "Lag per group and partition (live read)",
        "topics",
        Action.VIEW,
        GroupFilter,
        lambda c: sel.lag_get(**c.read()),
        api=Api("api-lag", API + "/lag"),
    ),
    Operation(
        "Pending entries of a group (live read; group required)",
        "pending",
        Action.VIEW,
        PelQuery,
        lambda c: pending.pending_json(**c.read()),
        page=Page(
            "pending",
            PAGE + "pending/",
            template="dashboard/pending.html#table",
            context=_pending_page,
            input=PelPage,
            run=lambda c: pending.pending_page_get(**c.read()),
        ),
    ),
    Operation(
        "Partition leases",
        "topics",
        Action.VIEW,
        GroupFilter,
        lambda c: leases.leases_get(**c.read()),
        page=Page(
            "leases",
            PAGE + "leases/",
            template="dashboard/leases.html#live",
            context=_leases_page,
        ),
    ),
    Operation(
        "One message (payload masked without the right to see it; cut to max_bytes: "
        "payload_size, payload_truncated) and its trace: delivery per group, retries, DLQ",
        "topics",
        Action.VIEW,
        MessageCut,
        lambda c: messages.message_view_get(**c.url, user=c.user),
        page=Page(
            "message-detail", MESSAGE, template="dashboard/message.html", context=_message_page
        ),
        api=Api("api-message", answer=lambda c, v: v.json(c.input.max_bytes)),
    ),
)
