"""The incident timeline: a cluster's (with a topic filter), a topic's tab, and the JSON;
newest first, ``next_before`` (null on the last page) is the next page's ``before``."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from dashboard.operations.declare import Api, Call, Operation, Page, doc, route
from dashboard.permissions import Action
from dashboard.selectors.pages.snapshot import now_ms
from dashboard.selectors.pages.timeline import KINDS, parse_kinds, parse_time, timeline_get

__all__ = ["OPERATIONS"]

When = "(epoch ms or ISO time, UTC when no zone)"


class Filters(msgspec.Struct):
    """The timeline's filters and page."""

    topic: Annotated[str, doc("one topic")] = ""
    kind: Annotated[list[str], doc("event kinds (repeated or comma-separated)")] = []
    group: Annotated[str, doc("one group")] = ""
    since: Annotated[str, doc(f"from {When}")] = ""
    until: Annotated[str, doc(f"to {When}")] = ""
    limit: Annotated[int, doc("1..500, default 100", ge=1, le=500)] = 100
    before: Annotated[str, doc("next_before of the previous answer")] = ""


def _chosen(c: Call[Filters]) -> dict[str, Any]:
    """The filters as read: the topic (the URL's, else the query's), kinds and group."""
    f = c.input
    topic = c.url.get("topic") or f.topic.strip() or None
    return {"topic": topic, "kinds": parse_kinds(f.kind), "group": f.group.strip() or None}


def _timeline(c: Call[Filters]) -> dict[str, Any]:
    f = c.input
    return timeline_get(
        c.cluster,
        user=c.user,
        **_chosen(c),
        since_ms=parse_time(f.since, "since"),
        until_ms=parse_time(f.until, "until"),
        limit=f.limit,
        before=f.before.strip() or None,
    )


def _context(c: Call[Filters], data: dict[str, Any]) -> dict[str, Any]:
    chosen, f = _chosen(c), c.input
    return {
        "topic": c.url.get("topic"),
        "picked_topic": chosen["topic"] or "",
        "kinds": KINDS,
        "chosen": chosen["kinds"],
        "group": chosen["group"] or "",
        "since": f.since,
        "until": f.until,
        "d": data,
        "now_ms": now_ms(),
    }


def _page(name: str, path: str) -> Page:
    return Page(name, path, template="dashboard/timeline.html", region="list", context=_context)


def _json(c: Call[Filters], data: dict[str, Any]) -> dict[str, Any]:
    chosen = _chosen(c)
    return {
        "cluster": c.cluster,
        **chosen,
        "kinds": chosen["kinds"] or list(KINDS),
        "events": data["events"],
        "next_before": data["next_before"],
    }


OPERATIONS = (
    Operation(
        "Incident timeline, newest first",
        "timeline",
        Action.VIEW,
        Filters,
        _timeline,
        page=_page("timeline", route("timeline", topic=False)),
        pages=(_page("topic-timeline", route("timeline")),),
        api=Api(answer=_json),
    ),
)
