"""The incident timeline: a cluster's (with a topic filter), a topic's tab, and the JSON;
newest first, ``next_before`` (null on the last page) is the next page's ``before``."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from dashboard.operations.declare import Api, Call, Operation, Page, doc, route
from dashboard.permissions import Action
from dashboard.selectors.pages.timeline import TimelineView, timeline_view

__all__ = ["OPERATIONS"]

When = "(epoch ms or ISO time, UTC when no zone)"
TEMPLATE = "dashboard/timeline.html#list"


class Filters(msgspec.Struct):
    """The timeline's filters and page."""

    picked: Annotated[str, doc("one topic")] = msgspec.field(name="topic", default="")
    kind: Annotated[list[str], doc("event kinds (repeated or comma-separated)")] = []
    group: Annotated[str, doc("one group")] = ""
    since: Annotated[str, doc(f"from {When}")] = ""
    until: Annotated[str, doc(f"to {When}")] = ""
    limit: Annotated[int, doc("1..500, default 100", ge=1, le=500)] = 100
    before: Annotated[str, doc("next_before of the previous answer")] = ""


def _context(c: Call[Filters], view: TimelineView) -> dict[str, Any]:
    return view.context()


OPERATIONS = (
    Operation(
        "Incident timeline, newest first",
        "timeline",
        Action.VIEW,
        Filters,
        lambda c: timeline_view(**c.read()),
        page=Page("timeline", route("timeline", topic=False), template=TEMPLATE, context=_context),
        pages=(Page("topic-timeline", route("timeline"), template=TEMPLATE, context=_context),),
        api=Api(answer=lambda c, view: view.json()),
    ),
)
