"""One dead letter and the DLQ's writes: the letter, replay, delete, purge, export.

Every write is a service call (permission -> audit -> mqcore); a page answers with a
redirect and a message (replay by htmx: the result partial), the API with JSON. The
page's export form sends ``id`` (repeated), the JSON ``ids``.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any

import msgspec
from django.contrib import messages
from django.http import HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.utils.http import content_disposition_header

from dashboard.operations.declare import Api, Call, NoInput, Operation, Page, Reason
from dashboard.permissions import Action, actions_for, can_map
from dashboard.ratelimits import rate_limited
from dashboard.selectors import dlq as sel
from dashboard.services import dlq as svc

__all__ = ["OPERATIONS", "export_disposition"]

PAGE = r"^clusters/(?P<cluster>[^/]+)/topics/(?P<topic>[^/]+)/dlq/"
API = r"^api/v1/clusters/(?P<cluster>[^/]+)/topics/(?P<topic>[^/]+)/dlq/"
LETTER = r"(?P<dlq_id>\d{1,20}-\d{1,20})"
_UNSAFE_FILENAME = re.compile(r"[^A-Za-z0-9._-]")


class Replay(Reason):
    """Why, and where to (another topic or partition: Admin)."""

    force: Annotated[bool, msgspec.Meta(description="replay even when already replayed")] = False
    target_topic: Annotated[str, msgspec.Meta(description="replay to another topic (Admin)")] = ""
    target_partition: (
        Annotated[int, msgspec.Meta(ge=0, description="replay to another partition (Admin)")] | None
    ) = None


class Purge(Reason):
    """The topic name typed again, and why."""

    confirm: Annotated[str, msgspec.Meta(description="the topic name, typed again")] = ""


class Export(msgspec.Struct):
    """The letters to export."""

    ids: Annotated[list[str], msgspec.Meta(description="letter ids")] = []


def _back(c: Call[Any], text: str, *, letter: bool = False) -> HttpResponse:
    messages.success(c.request, text)
    if letter:
        return redirect(
            "dashboard:dlq-letter", cluster=c.cluster, topic=c.topic, dlq_id=c.url["dlq_id"]
        )
    return redirect("dashboard:dlq", cluster=c.cluster, topic=c.topic)


def _letter(c: Call[NoInput]) -> dict[str, Any]:
    return sel.dlq_letter_get(user=c.user, cluster=c.cluster, topic=c.topic, dlq_id=c.url["dlq_id"])


def _letter_page(c: Call[NoInput], data: dict[str, Any]) -> dict[str, Any]:
    return {"can": can_map(actions_for(c.user, cluster=c.cluster, topic=c.topic)), **data}


def _letter_json(c: Call[NoInput], data: dict[str, Any]) -> dict[str, Any]:
    return {
        "cluster": c.cluster,
        "topic": c.topic,
        "letter": sel.letter_json(data["letter"]),
        "followups": data["followups"],
    }


def _replay(c: Call[Replay]) -> Any:
    i = c.input
    return svc.dlq_replay(
        acting_user=c.user,
        cluster=c.cluster,
        topic=c.topic,
        dlq_id=c.url["dlq_id"],
        reason=i.reason,
        force=i.force,
        target_topic=i.target_topic.strip() or None,
        target_partition=i.target_partition,
        origin=c.origin,
    )


def _replayed_page(c: Call[Replay], result: Any) -> HttpResponse:
    if getattr(c.request, "htmx", False):
        context = {"result": result, "cluster": c.cluster, "topic": c.topic}
        return render(c.request, "dashboard/partials/replay_result.html", context)
    if not result.replayed:
        messages.info(c.request, f"Not replayed: {result.reason}.")
        return redirect(
            "dashboard:dlq-letter", cluster=c.cluster, topic=c.topic, dlq_id=c.url["dlq_id"]
        )
    text = f"Replayed {c.url['dlq_id']} as {result.new_id} to {result.topic} p{result.partition}."
    return _back(c, text, letter=True)


def _replayed_json(c: Call[Replay], r: Any) -> dict[str, Any]:
    return {
        "replayed": r.replayed,
        "new_id": r.new_id,
        "topic": r.topic,
        "partition": r.partition,
        "reason": r.reason,
    }


def _delete(c: Call[Reason]) -> bool:
    return svc.dlq_delete(
        acting_user=c.user,
        cluster=c.cluster,
        topic=c.topic,
        dlq_id=c.url["dlq_id"],
        reason=c.input.reason,
        origin=c.origin,
    )


def _deleted_page(c: Call[Reason], deleted: bool) -> HttpResponse:
    dlq_id = c.url["dlq_id"]
    return _back(c, f"Deleted {dlq_id}." if deleted else f"{dlq_id} was already gone.")


def _purge(c: Call[Purge]) -> int:
    return svc.dlq_purge(
        acting_user=c.user,
        cluster=c.cluster,
        topic=c.topic,
        confirm=c.input.confirm,
        reason=c.input.reason,
        origin=c.origin,
    )


def _export(c: Call[Export]) -> list[dict[str, Any]]:
    return svc.dlq_export(
        acting_user=c.user, cluster=c.cluster, topic=c.topic, ids=c.input.ids, origin=c.origin
    )


def _export_form(data: QueryDict, read: dict[str, Any]) -> dict[str, Any]:
    return {"ids": data.getlist("id")}


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


EXPORT_LIMIT = (rate_limited("export"),)
OPERATIONS = (
    Operation(
        "One dead letter with its replay history and follow-ups",
        "dlq",
        Action.VIEW,
        run=_letter,
        pages=(
            Page(
                "dlq-letter",
                PAGE + LETTER + "/$",
                template="dashboard/dlq_letter.html",
                context=_letter_page,
            ),
        ),
        api=Api("api-dlq-letter", API + LETTER + "$", answer=_letter_json, loose=True),
    ),
    Operation(
        "Replay one letter",
        "dlq",
        Action.REPLAY,
        Replay,
        _replay,
        pages=(Page("dlq-replay", PAGE + LETTER + "/replay/$", "POST", answer=_replayed_page),),
        api=Api("api-dlq-replay", API + LETTER + "/replay$", "POST", answer=_replayed_json),
        early=False,
    ),
    Operation(
        "Delete one letter",
        "dlq",
        Action.DELETE,
        Reason,
        _delete,
        pages=(Page("dlq-delete", PAGE + LETTER + "/delete/$", "POST", answer=_deleted_page),),
        api=Api(
            "api-dlq-delete",
            API + LETTER + "/delete$",
            "POST",
            answer=lambda c, deleted: {"id": c.url["dlq_id"], "deleted": deleted},
        ),
        early=False,
    ),
    Operation(
        "Purge the topic's whole DLQ",
        "dlq",
        Action.PURGE,
        Purge,
        _purge,
        pages=(
            Page(
                "dlq-purge",
                PAGE + "purge/$",
                "POST",
                answer=lambda c, n: _back(c, f"Purged {n} letters from the DLQ of {c.topic}."),
            ),
        ),
        api=Api(
            "api-dlq-purge",
            API + "purge$",
            "POST",
            answer=lambda c, n: {"topic": c.topic, "purged": n},
        ),
        early=False,
    ),
    Operation(
        "Export letters as JSON (audited)",
        "dlq",
        Action.VIEW,
        Export,
        _export,
        pages=(
            Page(
                "dlq-export",
                PAGE + "export/$",
                "POST",
                form=_export_form,
                answer=_export_file,
                decorators=EXPORT_LIMIT,
            ),
        ),
        api=Api(
            "api-dlq-export",
            API + "export$",
            "POST",
            answer=_exported,
            loose=True,
            decorators=EXPORT_LIMIT,
        ),
    ),
)
