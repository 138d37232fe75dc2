"""The message browser and "produce a test message". A bad filter or produce form shows
the browser's form again with the error (400); the form's headers are ``NAME=VALUE`` lines."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from django.http import HttpResponse
from django.shortcuts import render

from dashboard.operations.declare import Api, Call, Operation, Page, api_path, doc, route
from dashboard.permissions import Action
from dashboard.ratelimits import BROWSE_FILTERS, count_request, rate_limited
from dashboard.selectors.pages.browse import BROWSE_PARAMS, browse_get
from dashboard.selectors.pages.params import parse_int
from dashboard.services import produce as svc

__all__ = ["OPERATIONS"]

PAGE = route("messages")
TEMPLATE = "dashboard/browse.html"
ROW_PAYLOAD_CHARS = 300


QUERY = {
    "partition": "one partition (default: all)",
    "order": "newest (default) or oldest first",
    "from_id": "start at this entry id (inclusive)",
    "from_time": "start at this time (epoch ms or ISO time, UTC)",
    "limit": "messages per page (default 50, at most 500)",
    "max_scan": "entries scanned at most (default 10000, at most 100000)",
    "cursor": "next_cursor of the previous page of the same query",
    "key": "message key, exactly",
    "header": "NAME (present) or NAME=VALUE",
    "text": "payload or headers contain (case-insensitive)",
    "where": 'expression, e.g. payload.customer == "c-1" and payload.amount > 100',
    "max_bytes": "payload bytes per message (default 1024, at most 65536)",
}  # BROWSE_PARAMS, as the document describes them (the selector reads the query)
Browse = msgspec.defstruct("Browse", [(n, Annotated[str, doc(d)], "") for n, d in QUERY.items()])


class ProduceForm(msgspec.Struct):
    payload: str = ""
    key: str = ""
    headers: str = ""  # NAME=VALUE lines
    partition: str = ""


class Produce(msgspec.Struct):
    payload: Annotated[str, doc("the message")] = ""
    key: Annotated[str, doc("optional message key (chooses the partition)")] = ""
    headers: Annotated[dict[str, str] | None, doc("optional headers, name -> string value")] = None
    partition: Annotated[int | None, doc("optional partition")] = None


def _browse(c: Call[Any]) -> dict[str, Any]:
    return browse_get(c.cluster, c.topic, c.request.GET, user=c.user)


def _page(c: Call[Any], produce: dict[str, str] | None = None) -> HttpResponse:
    """The browser, its form shown again (with the produce form's error, if any)."""
    query = c.request.GET
    form = {name: (query.get(name) or "").strip() for name in BROWSE_PARAMS}
    context: dict[str, Any] = {
        **c.url,
        "form": form,
        "produce": produce or {},
        "produce_open": query.get("produce") == "1",
        "can": c.can,
        "payload_chars": ROW_PAYLOAD_CHARS,
        "filtered": any(form[k] for k in BROWSE_FILTERS),
    }
    try:
        d = _browse(c)
    except ValueError as exc:  # a bad filter or parameter
        context["error"] = str(exc)
    else:
        following = query.copy()  # the next page: this query at the next cursor
        following["cursor"] = d["next_cursor"] or ""
        next_query = following.urlencode() if d["next_cursor"] else ""
        context |= {"d": d, "next_query": next_query, "paged": bool(form["cursor"])}
    status = 400 if produce or "error" in context else 200
    return render(c.request, TEMPLATE, context, status=status)


def _produced(c: Call[ProduceForm], _: None) -> HttpResponse:
    form = msgspec.structs.asdict(c.input)
    try:
        sent = svc.produce_message(
            **c.write()
            | {
                "key": c.input.key.strip() or None,
                "headers": svc.header_lines(c.input.headers),
                "partition": parse_int(c.input.partition.strip(), "partition", default=None),
            }
        )
    except ValueError as exc:
        count_request(c.request, "browse", BROWSE_FILTERS)  # the browser reads again
        return _page(c, {**form, "error": str(exc)})
    return c.back(
        f"Produced {sent['id']} to partition {sent['partition']}.",
        "message-detail",
        partition=sent["partition"],
        entry_id=sent["id"],
    )


OPERATIONS = (
    Operation(
        "Browse messages: partitions merged by id, filters, cursor paging, a bounded scan "
        "(scanned, stopped_at_bound; payloads masked without the right to see them)",
        "topics",
        Action.VIEW,
        Browse,
        page=Page("topic-browse", PAGE, answer=lambda c, _: _page(c)),
        api=Api(answer=lambda c, _: {"cluster": c.cluster, **_browse(c)}, loose=True),
        decorators=(rate_limited("browse", filters=BROWSE_FILTERS),),
    ),
    Operation(
        "The produce form",
        "topics",
        Action.VIEW,
        ProduceForm,
        page=Page("topic-produce", PAGE + "produce/", "POST", answer=_produced),
        twin="api-topic-produce",
    ),
    Operation(
        "Produce a test message (validated as mqcore produce; audited)",
        "topics",
        Action.PRODUCE,
        Produce,
        lambda c: svc.produce_message(**c.write() | {"key": c.input.key or None}),
        api=Api("api-topic-produce", api_path(PAGE + "produce/"), "POST", status=201),
        early=False,
    ),
)
