"""Claim pending entries to a consumer, or move them to the DLQ.

The JSON names one partition and its ``ids``; the pending page's form checks rows
``partition:id`` of any partitions (``Checked``, a page-only input) and runs the service
once per partition, then goes back to the pending page of the same group.
"""

from __future__ import annotations

from typing import Annotated, Any

from django.http import HttpResponse

from dashboard.operations.declare import Api, Call, Operation, Page, Reason, api_path, doc, route
from dashboard.permissions import Action
from dashboard.services import pending as svc

__all__ = ["OPERATIONS"]

PAGE = route("pending")
API = api_path(PAGE)
Consumer = Annotated[str, doc("consumer to claim to")]


class Entries(Reason, kw_only=True):
    """Pending entries of one partition of a group, and why."""

    group: Annotated[str, doc("consumer group")] = ""
    partition: Annotated[int, doc("partition of the entries", ge=0)]
    ids: Annotated[list[str], doc("pending entry ids")] = []


class Claim(Entries, kw_only=True):
    """The entries, and the consumer they go to."""

    consumer: Consumer = ""


class Checked(Reason):
    """The pending page's form: the checked rows ``partition:id`` (and the consumer)."""

    group: str = ""
    entry: list[str] = []
    consumer: Consumer = ""


def _one(c: Call[Entries], run: Any, key: str) -> dict[str, Any]:
    group = c.input.group.strip()
    done = run(**c.write() | {"group": group})
    return {"group": group, "partition": c.input.partition, key: done}


def _checked(c: Call[Checked], run: Any, **extra: str) -> int:
    """The service once per partition of the checked rows: the entries done."""
    grouped: dict[int, list[str]] = {}
    for raw in c.input.entry:
        part, _, entry_id = raw.partition(":")
        if not part.isdigit() or not entry_id:
            raise ValueError(f"bad entry reference {raw[:40]!r}")
        grouped.setdefault(int(part), []).append(entry_id)
    if not grouped:
        raise ValueError("select at least one pending entry")
    args = {"acting_user": c.user, **c.url, "group": c.input.group.strip(), **extra}
    args |= {"reason": c.input.reason, "origin": c.origin}
    return sum(len(run(**args, partition=p, ids=ids)) for p, ids in grouped.items())


def _back(text: str) -> Any:
    def answer(c: Call[Checked], n: int) -> HttpResponse:
        group = c.input.group.strip()
        return c.back(
            text.format(n=n, consumer=c.input.consumer),
            "pending",
            query=f"group={group}" if group else "",
        )

    return answer


OPERATIONS = (
    Operation(
        "Claim pending entries of one partition to a consumer",
        "pending",
        Action.CLAIM,
        Claim,
        lambda c: _one(c, svc.pending_claim, "claimed"),
        api=Api("api-pending-claim", API + "/claim", "POST"),
    ),
    Operation(
        "Dead-letter pending entries of one partition",
        "pending",
        Action.MOVE_TO_DLQ,
        Entries,
        lambda c: _one(c, svc.pending_move_to_dlq, "moved"),
        api=Api("api-pending-move-to-dlq", API + "/move-to-dlq", "POST"),
    ),
    Operation(
        "Claim the checked entries",
        "pending",
        Action.CLAIM,
        Checked,
        lambda c: _checked(c, svc.pending_claim, consumer=c.input.consumer),
        page=Page(
            "pending-claim",
            PAGE + "claim/",
            "POST",
            answer=_back("Claimed {n} entries to {consumer}."),
        ),
        early=False,
        twin="api-pending-claim",
    ),
    Operation(
        "Dead-letter the checked entries",
        "pending",
        Action.MOVE_TO_DLQ,
        Checked,
        lambda c: _checked(c, svc.pending_move_to_dlq),
        page=Page(
            "pending-move-to-dlq",
            PAGE + "move-to-dlq/",
            "POST",
            answer=_back("Moved {n} entries to the DLQ."),
        ),
        early=False,
        twin="api-pending-move-to-dlq",
    ),
)
