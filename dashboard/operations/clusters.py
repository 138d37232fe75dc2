"""The clusters and their overview: ``/`` (the first visible cluster's overview, or the one
the frame's picker names), the overview page and JSON (worst first), the topic list."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from dashboard.clusters import cluster_names
from dashboard.operations.declare import Api, Call, Operation, Page, api_path, doc, route
from dashboard.permissions import Action, cluster_visible
from dashboard.selectors.pages.overview import OVERVIEW_SORTS, overview_get, topics_get
from dashboard.selectors.pages.params import PAGE_SIZE
from dashboard.selectors.pages.snapshot import now_ms

__all__ = ["OPERATIONS", "visible"]

C = route(topic=False)
MAX_LIMIT = 500


class ClusterPick(msgspec.Struct):
    cluster: str = ""


class OverviewRows(msgspec.Struct):
    page: Annotated[int, doc("page number", ge=1)] = 1
    sort: Annotated[str, doc(f"one of {', '.join(OVERVIEW_SORTS)}")] = ""
    order: Annotated[str, doc("desc (default) or asc")] = ""
    problems: Annotated[bool, doc("only topics with a problem")] = False
    q: Annotated[str, doc("topic name contains")] = ""


class OverviewPaged(OverviewRows):
    per_page: Annotated[int, doc("rows per page", ge=1, le=MAX_LIMIT)] = PAGE_SIZE


class TopicSlice(msgspec.Struct):
    limit: Annotated[int, doc("page size", ge=1, le=MAX_LIMIT)] = 50
    offset: Annotated[int, doc("rows to skip", ge=0)] = 0


def visible(c: Call[Any]) -> list[str]:
    return [n for n in cluster_names() if cluster_visible(c.user, n)]


def _home(c: Call[ClusterPick], _: None) -> Any:
    names = visible(c) or cluster_names()
    return c.to("overview", cluster=c.input.cluster if c.input.cluster in names else names[0])


OPERATIONS = (
    Operation(
        "The first visible cluster's overview",
        "clusters",
        Action.VIEW,
        ClusterPick,
        page=Page("home", "", answer=_home),
        early=False,
        twin="api-clusters",
    ),
    Operation(
        "Clusters and health",
        "clusters",
        Action.VIEW,
        run=lambda c: {"clusters": visible(c)},
        api=Api("api-clusters", "api/v1/clusters"),
    ),
    Operation(
        "Cluster overview: topics with status, lag, pending, DLQ depth",
        "clusters",
        Action.VIEW,
        OverviewPaged,
        lambda c: overview_get(**c.read(), sparklines=False).json(),
        page=Page(
            "overview",
            C,
            template="dashboard/overview.html#table",
            context=lambda c, d: {"ov": d, "now_ms": now_ms()},
            input=OverviewRows,
            run=lambda c: overview_get(**c.read()),
        ),
        api=Api("api-overview", api_path(C + "overview")),
    ),
    Operation(
        "Topics (paged)",
        "topics",
        Action.VIEW,
        TopicSlice,
        lambda c: topics_get(**c.read()),
        api=Api("api-topics", api_path(C + "topics")),
    ),
)
