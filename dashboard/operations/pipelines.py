"""The checkpoints pages (after Flink's checkpoint tab; htmx polls the live region). The
page ignores a bad ``before`` (the first page), the API refuses it."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from django.conf import settings
from django.http import Http404, QueryDict
from msgspec import Meta

from dashboard.operations.declare import Api, Call, Operation, Page, doc, route
from dashboard.permissions import Action
from dashboard.selectors import pipelines as sel
from dashboard.selectors.pages.snapshot import now_ms

__all__ = ["OPERATIONS"]

PAGE = route("pipelines", topic=False)


class History(msgspec.Struct):
    before: Annotated[Annotated[int, Meta(ge=0)] | None, doc("a page's next_before")] = None
    limit: Annotated[Annotated[int, Meta(ge=0, le=200)] | None, doc("page size (20)")] = None


def _before(data: QueryDict, read: dict[str, Any]) -> dict[str, Any]:
    try:
        value = int(data.get("before", ""))
    except ValueError:
        return {}
    return {"before": value} if value >= 0 else {}


def _pipeline(c: Call[History]) -> dict[str, Any]:
    name, limit = c.url["name"], c.input.limit or sel.HISTORY_PAGE
    data = sel.pipeline_get(
        cluster=c.cluster, pipeline=name, user=c.user, before=c.input.before, limit=limit
    )
    if data is None:
        raise Http404(f"unknown pipeline {name!r}")
    return data


def _live(**context: Any) -> dict[str, Any]:  # the live region polls this often
    return context | {"poll_seconds": settings.PIPELINES_POLL_S}


OPERATIONS = (
    Operation(
        "Pipelines",
        "pipelines",
        Action.VIEW,
        run=lambda c: sel.pipeline_list(**c.read()),
        page=Page(
            "pipelines",
            PAGE,
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
            PAGE + "<str:name>/",
            template="dashboard/pipeline.html#live",
            form=_before,
            context=lambda c, p: _live(p=p, before=c.input.before),
        ),
        api=Api(answer=lambda c, p: {"cluster": c.cluster, "pipeline": c.url["name"], **p}),
    ),
)
