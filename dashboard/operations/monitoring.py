"""Watching the clusters, an SRE's first screens: ``/`` (the first visible cluster's
overview, or the one the frame's picker names), the overview (worst first) and the topic
list; the collectors' health; the alerts, their silences and acknowledgements (the page
names an alert by ``target``, ``[cluster, id]``, a custom duration by
``duration_custom``); the incident timeline (a cluster's with a topic filter, a topic's
tab; newest first, ``next_before``, null on the last page, is the next page's
``before``); and the pipelines' checkpoints (after Flink's checkpoint tab; htmx polls the
live region; the page ignores a bad ``before``, the first page, the API refuses it)."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from django.conf import settings
from django.http import Http404, HttpResponse, QueryDict
from msgspec import Meta

from dashboard.clusters import cluster_names
from dashboard.operations.declare import Api, Call, Operation, Page, Reason, api_path, doc, route
from dashboard.permissions import Action, cluster_visible
from dashboard.selectors import pipelines as pipelines_sel
from dashboard.selectors.alerts import alerts_json, alerts_page_get
from dashboard.selectors.collectors import collector_rows
from dashboard.selectors.pages.overview import OverviewSort, overview_get, topics_get
from dashboard.selectors.pages.params import PAGE_SIZE, Order
from dashboard.selectors.pages.snapshot import now_ms
from dashboard.selectors.pages.timeline import TimelineView, timeline_view
from dashboard.services import alert_mutes as svc

__all__ = ["OPERATIONS"]

C = route(topic=False)
PIPELINES = route("pipelines", topic=False)
TIMELINE = "dashboard/timeline.html#list"
MAX_LIMIT = 500
MUTED = {"silence": "Silenced", "ack": "Acknowledged"}
When = "(epoch ms or ISO time, UTC when no zone)"
Cluster = Annotated[str, doc("cluster")]


class ClusterPick(msgspec.Struct):
    cluster: str = ""


class OverviewPaged(msgspec.Struct):
    page: Annotated[int, doc("page number", ge=1)] = 1
    sort: Annotated[OverviewSort, doc("status (default: worst first) or a column")] = "status"
    order: Annotated[Order, doc("desc (default) or asc")] = "desc"
    problems: Annotated[bool, doc("only topics with a problem")] = False
    q: Annotated[str, doc("topic name contains")] = ""
    per_page: Annotated[int, doc("rows per page", ge=1, le=MAX_LIMIT)] = PAGE_SIZE


class TopicSlice(msgspec.Struct):
    limit: Annotated[int, doc("page size", ge=1, le=MAX_LIMIT)] = 50
    offset: Annotated[int, doc("rows to skip", ge=0)] = 0


def _visible(c: Call[Any]) -> list[str]:
    return [n for n in cluster_names() if cluster_visible(c.user, n)]


def _home(c: Call[ClusterPick], visible: dict[str, list[str]]) -> Any:
    """The overview of the cluster the picker names, if visible, else the first visible."""
    names = visible["clusters"] or cluster_names()
    return c.to("overview", cluster=c.input.cluster if c.input.cluster in names else names[0])


class Alerts(msgspec.Struct):
    """One cluster's alerts (none: every cluster's)."""

    cluster: Cluster = ""


class AlertRef(Reason):
    """An open alert, and why."""

    cluster: Cluster = ""
    alert_id: Annotated[str, doc("alert id")] = msgspec.field(name="alert", default="")


class Mute(AlertRef):
    """The alert, silence or acknowledgement, for how long, and why."""

    kind: Annotated[str, doc("silence or ack")] = "silence"
    duration: Annotated[str, doc("15m, 1h, ...")] = ""


def _mute_form(data: QueryDict, read: dict[str, Any]) -> dict[str, Any]:
    """``target`` and a custom duration read into the JSON's fields."""
    if raw := data.get("target", ""):
        try:
            cluster, alert = msgspec.json.decode(raw, type=tuple[str, str])
        except msgspec.DecodeError:  # also a ValidationError: not [cluster, id]
            raise ValueError("choose an open alert") from None
        read |= {"cluster": cluster, "alert": alert}
    if data.get("duration") == "custom":
        read["duration"] = data.get("duration_custom", "")
    return read


def _muted(c: Call[Mute], mute: dict[str, Any]) -> HttpResponse:
    return c.back(f"{MUTED[c.input.kind]} {mute['alert_id']}.", "alerts")


def _collectors(key: str) -> Any:
    return lambda c, rows: {key: rows, "interval_s": settings.COLLECT_INTERVAL_S}


class Filters(msgspec.Struct):
    """The timeline's filters and page."""

    picked: Annotated[str, doc("one topic")] = msgspec.field(name="topic", default="")
    kind: Annotated[list[str], doc("event kinds (repeated or comma-separated)")] = []
    group: Annotated[str, doc("one group")] = ""
    since: Annotated[str, doc(f"from {When}")] = ""
    until: Annotated[str, doc(f"to {When}")] = ""
    limit: Annotated[int, doc("1..500, default 100", ge=1, le=500)] = 100
    before: Annotated[str, doc("next_before of the previous answer")] = ""


def _timeline(c: Call[Filters], view: TimelineView) -> dict[str, Any]:
    return view.context()


class History(msgspec.Struct):
    before: Annotated[Annotated[int, Meta(ge=0)] | None, doc("a page's next_before")] = None
    limit: Annotated[Annotated[int, Meta(ge=0, le=200)] | None, doc("page size (20)")] = None


def _before(data: QueryDict, read: dict[str, Any]) -> dict[str, Any]:
    """The page reads only ``before``, a bad one as none (the first page)."""
    before = data.get("before", "")
    return {"before": int(before)} if before.isascii() and before.isdigit() else {}


def _pipeline(c: Call[History]) -> dict[str, Any]:
    name, limit = c.url["name"], c.input.limit or pipelines_sel.HISTORY_PAGE
    data = pipelines_sel.pipeline_get(
        cluster=c.cluster, pipeline=name, user=c.user, before=c.input.before, limit=limit
    )
    if data is None:
        raise Http404(f"unknown pipeline {name!r}")
    return data


def _live(**context: Any) -> dict[str, Any]:  # the live region polls this often
    return context | {"poll_seconds": settings.PIPELINES_POLL_S}


OPERATIONS = (
    Operation(
        "Clusters and health",
        "clusters",
        Action.VIEW,
        run=lambda c: {"clusters": _visible(c)},
        page=Page("home", "", input=ClusterPick, answer=_home, early=False),
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
    Operation(
        "Collector health: the last pass per visible cluster",
        "ops",
        Action.VIEW,
        run=lambda c: collector_rows(c.user),
        page=Page(
            "collectors",
            "collectors/",
            template="dashboard/collectors.html#live",
            context=_collectors("rows"),
        ),
        api=Api(answer=_collectors("collectors")),
    ),
    Operation(
        "Open alerts",
        "alerts",
        Action.VIEW,
        Alerts,
        page=Page(
            "alerts",
            "alerts/",
            template="dashboard/alerts.html#live",
            context=lambda c, _: alerts_page_get(c.input.cluster, user=c.user),
        ),
        api=Api(answer=lambda c, _: alerts_json(c.input.cluster, user=c.user)),
    ),
    Operation(
        "Silence or acknowledge an alert",
        "alerts",
        Action.SILENCE,
        Mute,
        lambda c: svc.alert_mute(**c.write()),
        page=Page("alert-mute", "alerts/mute/", "POST", form=_mute_form, answer=_muted),
        api=Api(answer=lambda c, mute: {"mute": mute}),
        early="somewhere",
    ),
    Operation(
        "Lift a silence or acknowledgement",
        "alerts",
        Action.SILENCE,
        AlertRef,
        lambda c: svc.alert_unmute(**c.write()),
        page=Page(
            "alert-unmute",
            "alerts/unmute/",
            "POST",
            back=("Lifted the silence of {alert_id}.", "alerts"),
        ),
        api=Api(answer=lambda c, _: {"lifted": c.input.alert_id}),
        early="somewhere",
    ),
    Operation(
        "Incident timeline, newest first",
        "timeline",
        Action.VIEW,
        Filters,
        lambda c: timeline_view(**c.read()),
        page=Page("timeline", route("timeline", topic=False), template=TIMELINE, context=_timeline),
        pages=(Page("topic-timeline", route("timeline"), template=TIMELINE, context=_timeline),),
        api=Api(answer=lambda c, view: view.json()),
    ),
    Operation(
        "Pipelines",
        "pipelines",
        Action.VIEW,
        run=lambda c: pipelines_sel.pipeline_list(**c.read()),
        page=Page(
            "pipelines",
            PIPELINES,
            template="dashboard/pipelines.html#live",
            context=lambda c, rows: _live(pipelines=rows, now_ms=now_ms()),
        ),
        api=Api(answer=lambda c, rows: {"cluster": c.cluster, "pipelines": rows}),
    ),
    Operation(
        "One pipeline and its checkpoints",
        "pipelines",
        Action.VIEW,
        History,
        _pipeline,
        page=Page(
            "pipeline-detail",
            PIPELINES + "<str:name>/",
            template="dashboard/pipeline.html#live",
            form=_before,
            context=lambda c, p: _live(p=p, before=c.input.before),
        ),
        api=Api(answer=lambda c, p: {"cluster": c.cluster, "pipeline": c.url["name"], **p}),
    ),
)
