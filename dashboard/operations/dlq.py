"""A topic's DLQ: its letters (filtered, paged by a cursor), one letter, and the writes
(replay, delete, purge, export). The page's forms send ``id`` (repeated), the JSON ``ids``."""

from __future__ import annotations

import json
import re
from typing import Annotated, Any

import msgspec
from django.http import HttpResponse, QueryDict
from django.shortcuts import render
from django.utils.http import content_disposition_header

from dashboard.operations.declare import Api, Call, Operation, Page, Reason, doc
from dashboard.permissions import Action
from dashboard.ratelimits import DLQ_FILTERS, rate_limited
from dashboard.selectors import dlq as sel
from dashboard.services import dlq as svc

__all__ = [
    "OPERATIONS",
    "Filters",
    "Force",
    "Partition",
    "TargetTopic",
    "export_disposition",
    "ids_form",
]

PAGE = r"^clusters/(?P<cluster>[^/]+)/topics/(?P<topic>[^/]+)/dlq/"
LETTER = PAGE + r"(?P<dlq_id>\d{1,20}-\d{1,20})/"
REPLAYED = ("replayed", "new_id", "topic", "partition", "reason")
_UNSAFE_FILENAME = re.compile(r"[^A-Za-z0-9._-]")
Partition = Annotated[int, doc("replay to another partition (Admin)", ge=0)]
Force = Annotated[bool, doc("replay even when already replayed")]
TargetTopic = Annotated[str, doc("replay to another topic (Admin)")]
Text = str | int  # a filter field: text (JSON: or a number)


class Filters(msgspec.Struct):
    """Letters whose fields match (all given)."""

    text: Annotated[Text, doc("payload text contains")] = ""
    partition: Annotated[Text, doc("source partition")] = ""
    key: Annotated[Text, doc("message key")] = ""
    since: Annotated[Text, doc("dead-lettered at or after (epoch ms or ISO)")] = ""
    until: Annotated[Text, doc("dead-lettered before (epoch ms or ISO)")] = ""

    def read(self) -> sel.DlqFilters:
        return sel.DlqFilters.from_query(
            {f: str(getattr(self, f)) for f in Filters.__struct_fields__}
        )


class Letters(Filters):
    """The filters, and a page: newest first, ``before`` the cursor."""

    before: Annotated[str, doc("cursor (next_cursor)")] = ""
    limit: Annotated[int, doc("page size (1..200)", ge=1, le=200)] = 50


class Replay(Reason):
    """Why, and where to (another topic or partition: Admin)."""

    force: Force = False
    target_topic: TargetTopic = ""
    target_partition: Partition | None = None


class Purge(Reason):
    """The topic name typed again, and why."""

    confirm: Annotated[str, doc("the topic name, typed again")] = ""


class Export(msgspec.Struct):
    """The letters to export."""

    ids: Annotated[list[str], doc("letter ids")] = []


def _letters(c: Call[Letters]) -> Any:
    return sel.dlq_page_get(
        user=c.user,
        cluster=c.cluster,
        topic=c.topic,
        filters=c.input.read(),
        before=c.input.before or None,
        limit=c.input.limit,
    )


def _letter(c: Call[Any], d: dict[str, Any]) -> dict[str, Any]:
    return {"cluster": c.cluster, "topic": c.topic, **d, "letter": sel.letter_json(d["letter"])}


def _replay(c: Call[Replay]) -> Any:
    return svc.dlq_replay(**c.write() | {"target_topic": c.input.target_topic.strip() or None})


def _replayed_page(c: Call[Replay], r: Any) -> HttpResponse:
    if getattr(c.request, "htmx", False):
        context = {"result": r, "cluster": c.cluster, "topic": c.topic}
        return render(c.request, "dashboard/partials/replay_result.html", context)
    if not r.replayed:
        return c.back(f"Not replayed: {r.reason}.", "dlq-letter", *c.url, info=True)
    text = f"Replayed {c.url['dlq_id']} as {r.new_id} to {r.topic} p{r.partition}."
    return c.back(text, "dlq-letter", *c.url)


def _deleted_page(c: Call[Reason], deleted: bool) -> HttpResponse:
    letter = c.url["dlq_id"]
    return c.back(f"Deleted {letter}." if deleted else f"{letter} was already gone.", "dlq")


def _purged_page(c: Call[Purge], n: int) -> HttpResponse:
    return c.back(f"Purged {n} letters from the DLQ of {c.topic}.", "dlq")


def export_disposition(topic: str) -> str:
    """``attachment; filename="dlq-TOPIC.json"`` from the topic's safe characters only
    (topic names are ``[A-Za-z0-9._-]``; anything else becomes ``_``), properly quoted."""
    safe = _UNSAFE_FILENAME.sub("_", topic)[:200] or "topic"
    return content_disposition_header(True, f"dlq-{safe}.json") or "attachment"


def _exported(c: Call[Export], letters: list[dict[str, Any]]) -> dict[str, Any]:
    return {"cluster": c.cluster, "topic": c.topic, "letters": letters}


def _export_file(c: Call[Export], letters: list[dict[str, Any]]) -> HttpResponse:
    body = json.dumps(_exported(c, letters), indent=2, default=str)
    response = HttpResponse(body, content_type="application/json")
    response["Content-Disposition"] = export_disposition(c.topic)
    return response


def ids_form(data: QueryDict, read: dict[str, Any]) -> dict[str, Any]:
    return read | {"ids": data.getlist("id")}


OPERATIONS = (
    Operation(
        "Dead letters, newest first",
        "dlq",
        Action.VIEW,
        Letters,
        _letters,
        page=Page(
            "dlq",
            PAGE + "$",
            template="dashboard/dlq.html#letters",
            form=lambda data, read: read | {"limit": 50},
            context=lambda c, page: {**page.context(), "can": c.can},
        ),
        api=Api(answer=lambda c, page: page.json()),
        decorators=(rate_limited("browse", filters=DLQ_FILTERS),),
    ),
    Operation(
        "One dead letter with its replay history and follow-ups",
        "dlq",
        Action.VIEW,
        run=lambda c: sel.dlq_letter_get(**c.read()),
        page=Page(
            "dlq-letter",
            LETTER + "$",
            template="dashboard/dlq_letter.html",
            context=lambda c, d: {"can": c.can, **d},
        ),
        api=Api(answer=_letter, loose=True),
    ),
    Operation(
        "Replay one letter",
        "dlq",
        Action.REPLAY,
        Replay,
        _replay,
        page=Page("dlq-replay", LETTER + "replay/$", "POST", answer=_replayed_page),
        api=Api(answer=lambda c, r: {k: getattr(r, k) for k in REPLAYED}),
        early=False,
    ),
    Operation(
        "Delete one letter",
        "dlq",
        Action.DELETE,
        Reason,
        lambda c: svc.dlq_delete(**c.write()),
        page=Page("dlq-delete", LETTER + "delete/$", "POST", answer=_deleted_page),
        api=Api(answer=lambda c, deleted: {"id": c.url["dlq_id"], "deleted": deleted}),
        early=False,
    ),
    Operation(
        "Purge the topic's whole DLQ",
        "dlq",
        Action.PURGE,
        Purge,
        lambda c: svc.dlq_purge(**c.write()),
        page=Page("dlq-purge", PAGE + "purge/$", "POST", answer=_purged_page),
        api=Api(answer=lambda c, n: {"topic": c.topic, "purged": n}),
        early=False,
    ),
    Operation(
        "Export letters as JSON (audited)",
        "dlq",
        Action.VIEW,
        Export,
        lambda c: svc.dlq_export(**c.write()),
        page=Page("dlq-export", PAGE + "export/$", "POST", form=ids_form, answer=_export_file),
        api=Api(answer=_exported, loose=True),
        decorators=(rate_limited("export"),),
    ),
)
