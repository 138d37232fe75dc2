"""The clusters and their overview: ``/`` (the first visible cluster's overview, or the one
the frame's picker names), the overview page and JSON (worst first), the topic list."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from django.shortcuts import redirect
from msgspec import Meta

from dashboard.clusters import cluster_names
from dashboard.operations.declare import Api, Call, Operation, Page
from dashboard.permissions import Action, cluster_visible
from dashboard.selectors.pages.overview import OVERVIEW_SORTS, overview_get, topics_get
from dashboard.selectors.pages.params import PAGE_SIZE
from dashboard.selectors.pages.snapshot import now_ms

__all__ = ["OPERATIONS", "visible"]

C = "clusters/<str:cluster>/"
MAX_LIMIT = 500


class ClusterPick(msgspec.Struct):
    cluster: str = ""


class OverviewRows(msgspec.Struct):
    page: Annotated[int, Meta(ge=1, description="page number")] = 1
    sort: Annotated[str, Meta(description=f"one of {', '.join(OVERVIEW_SORTS)}")] = ""
    order: Annotated[str, Meta(description="desc (default) or asc")] = ""
    problems: Annotated[bool, Meta(description="only topics with a problem")] = False
    q: Annotated[str, Meta(description="topic name contains")] = ""


class OverviewPaged(OverviewRows):
    per_page: Annotated[int, Meta(ge=1, le=MAX_LIMIT, description="rows per page")] = PAGE_SIZE


class TopicSlice(msgspec.Struct):
    limit: Annotated[int, Meta(ge=1, le=MAX_LIMIT, description="page size")] = 50
    offset: Annotated[int, Meta(ge=0, description="rows to skip")] = 0


def visible(c: Call[Any]) -> list[str]:
    return [n for n in cluster_names() if cluster_visible(c.user, n)]


def _home(c: Call[ClusterPick], _: None) -> Any:
    names = visible(c) or cluster_names()
    return redirect(
        "dashboard:overview", cluster=c.input.cluster if c.input.cluster in names else names[0]
    )


OPERATIONS = (
    Operation(
        "The first visible cluster's overview",
        "clusters",
        Action.VIEW,
        ClusterPick,
        early=False,
        pages=(Page("home", "", answer=_home),),
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
        "The overview page",
        "clusters",
        Action.VIEW,
        OverviewRows,
        lambda c: overview_get(**c.read()),
        twin="api-overview",
        pages=(
            Page(
                "overview",
                C,
                template="dashboard/overview.html",
                region="table",
                context=lambda c, d: {"ov": d, "now_ms": now_ms()},
            ),
        ),
    ),
    Operation(
        "Cluster overview: topics with status, lag, pending, DLQ depth",
        "clusters",
        Action.VIEW,
        OverviewPaged,
        lambda c: overview_get(**c.read(), sparklines=False).json(),
        api=Api("api-overview", "api/v1/" + C + "overview"),
    ),
    Operation(
        "Topics (paged)",
        "topics",
        Action.VIEW,
        TopicSlice,
        lambda c: topics_get(**c.read()),
        api=Api("api-topics", "api/v1/" + C + "topics"),
    ),
)
