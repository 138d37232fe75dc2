"""The retry browser. The write form posts ``ids`` (or one row's ``one``) and the filter's
fields flat, the JSON ``ids`` and ``filter``; the page comes back to the list, same filter."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import urlencode

import msgspec
from django.http import HttpResponse, QueryDict

from dashboard.operations.declare import Api, Call, Operation, Page, Reason, doc, in_cluster, route
from dashboard.permissions import Action
from dashboard.ratelimits import RETRY_FILTERS, rate_limited
from dashboard.selectors.retries import FILTERS, RetryPage, retries_overview_get, retries_page_get
from dashboard.services import retries as svc

__all__ = ["OPERATIONS"]

PAGE = route("retries")
Value = str | int | None


class RetryFilter(msgspec.Struct):
    state: Annotated[Value, doc("all, due (due now) or scheduled (later)")] = None
    order: Annotated[Value, doc("asc (soonest due first) or desc")] = None
    key: Annotated[Value, doc("message key")] = None
    text: Annotated[
        Value, doc("payload or header text contains (refused where payloads are masked)")
    ] = None
    partition: Annotated[Value, doc("the item's partition")] = None


class RetryAct(Reason):
    ids: Annotated[list[str], doc("retry item ids")] = []
    all_matching: Annotated[bool, doc("act on every item matching filter (10000 per call)")] = False
    filter: RetryFilter = msgspec.field(default_factory=RetryFilter)
    cursor: Annotated[str, doc("continue an all_matching run after its next_cursor")] = ""
    confirm: Annotated[str, doc("the topic name, to delete all matching")] = ""


def _list(c: Call[RetryPage], d: dict[str, Any]) -> dict[str, Any]:
    return {
        "d": d,
        "f": d["filters"],
        "query": urlencode(d["filters"]),
        "can": c.can,
        "first_page": bool(c.input.cursor or c.input.offset),
    }


def _form(data: QueryDict, read: dict[str, Any]) -> dict[str, Any]:
    """One row's button (``one``: that row alone) and the filter's fields, flat in a form."""
    one = data.get("one", "").strip()
    read |= {"cursor": "", "filter": {k: data.get(k, "") for k in FILTERS}}
    return read | {"ids": [one], "all_matching": False} if one else read


def _write(action: str, summary: str) -> Operation:
    def run(c: Call[RetryAct]) -> dict[str, Any]:
        kw = c.write()
        flt = {k: v for k, v in msgspec.structs.asdict(kw.pop("filter")).items() if v is not None}
        cursor = kw.pop("cursor") or None
        return svc.retries_act(**kw, action=action, filters=flt, cursor=cursor)

    def done(c: Call[RetryAct], result: dict[str, Any]) -> HttpResponse:
        count = result["deleted" if action == "delete" else "retried"]
        verb = "Deleted" if action == "delete" else "Retried"
        text = f"{verb} {count} retry item{'s' if count != 1 else ''}"
        if result["missing"]:
            text += f"; {result['missing']} already gone"
        if result["skipped"]:
            text += f"; {result['skipped']} left in place (another topic's slot or unreadable)"
        if result["more"]:
            text += "; more items match: run it again"
        post = c.request.POST
        kept = {k: post.get(k, "").strip() for k in FILTERS if post.get(k, "").strip()}
        return c.back(text + ".", "topic-retries", query=urlencode(kept))

    return Operation(
        summary,
        "retries",
        Action.RETRY,
        RetryAct,
        run,
        early=False,
        page=Page(f"topic-retries-{action}", f"{PAGE}{action}/", "POST", form=_form, answer=done),
        api=Api(answer=in_cluster),
    )


OPERATIONS = (
    Operation(
        "Topics with their retry counts and next due time (latest snapshot)",
        "retries",
        Action.VIEW,
        run=lambda c: retries_overview_get(**c.read()),
        page=Page(
            "retries",
            route("retries", topic=False),
            template="dashboard/retries_index.html",
            shown="d",
        ),
        api=Api(answer=in_cluster),
    ),
    Operation(
        "A page of the topic's retry items by due time",
        "retries",
        Action.VIEW,
        RetryPage,
        lambda c: retries_page_get(user=c.user, **c.url, query=c.input),
        page=Page("topic-retries", PAGE, template="dashboard/retries.html#list", context=_list),
        api=Api(answer=in_cluster),
        decorators=(rate_limited("browse", filters=RETRY_FILTERS),),
    ),
    _write("retry", "Put retry items back on their partitions now"),
    _write("delete", "Delete retry items (the messages are lost)"),
)
