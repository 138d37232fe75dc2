"""A consumer group on a topic: its pending entries (the page and the JSON, live reads),
claimed to a consumer or moved to the DLQ, and its position (Admin only: the form, its
dry run, an htmx partial, and the move).

The claim and dead-letter JSON names one partition and its ``ids``; the pending page's
form checks rows ``partition:id`` of any partitions (``Checked``, a page-only input) and
runs the service once per partition, then goes back to the pending page of the same
group. The position form's ``kind``, ``time_value`` / ``id_value``, ``scope`` (``all``,
or ``some`` with the ``partitions`` text) are read into the JSON's ``target`` and
``partitions``.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from django.http import HttpResponse, QueryDict
from msgspec import Meta

from dashboard.operations.declare import (
    Api,
    Call,
    Operation,
    Page,
    Reason,
    Why,
    api_path,
    doc,
    route,
)
from dashboard.operations.topic import GroupFilter
from dashboard.permissions import Action, has_action
from dashboard.selectors import position as position_sel
from dashboard.selectors.pages import pending as pending_sel
from dashboard.selectors.pages.params import Order
from dashboard.selectors.pages.pending import PendingSort
from dashboard.services import pending as svc
from dashboard.services import position as position_svc

__all__ = ["OPERATIONS"]

PENDING = route("pending")
POSITION = route("groups/<str:group>/position")
POSITION_TEMPLATE = "dashboard/position.html"
KINDS = ("earliest", "latest", "time", "id")
AtLeast = Annotated[int, Meta(ge=0)] | None
Consumer = Annotated[str, doc("consumer to claim to")]


class Pel(GroupFilter):
    """Filters and order of a group's pending entries (min_*: at least)."""

    consumer: str = ""
    partition: AtLeast = None
    min_idle_s: AtLeast = None
    min_deliveries: AtLeast = None
    sort: Annotated[PendingSort, doc("idle (default) or count")] = "idle"
    order: Annotated[Order, doc("desc (default) or asc")] = "desc"


class PelPage(Pel):
    page: Annotated[int, Meta(ge=1)] = 1


class PelQuery(Pel):
    min_idle_ms: AtLeast = None
    limit: Annotated[int, Meta(ge=1, le=500)] = 50
    offset: Annotated[int, Meta(ge=0)] = 0


def _pending_page(c: Call[PelPage], d: dict[str, Any]) -> dict[str, Any]:
    return d | {"can_act": has_action(c.user, Action.CLAIM, cluster=c.cluster, topic=c.topic)}


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


def _checked(c: Call[Checked], run: Any, kind: type[Entries]) -> int:
    """``run`` once per partition of the checked rows (with the fields of ``kind`` the form
    has): the entries done."""
    grouped: dict[int, list[str]] = {}
    for raw in c.input.entry:
        part, _, entry_id = raw.partition(":")
        if not part.isdigit() or not entry_id:
            raise ValueError(f"bad entry reference {raw[:40]!r}")
        grouped.setdefault(int(part), []).append(entry_id)
    if not grouped:
        raise ValueError("select at least one pending entry")
    args = {k: v for k, v in c.write().items() if k == "actor" or k in kind.__struct_fields__}
    args["group"] = c.input.group.strip()
    return sum(len(run(**args, partition=p, ids=ids)) for p, ids in grouped.items())


def _pending(
    summary: str, action: Action, kind: type[Entries], run: Any, what: str, done: str, text: str
) -> Operation:
    """A write on pending entries (``run``) at ``pending/<what>/``: the JSON's on one
    partition (its ids ``done``), the page's on the checked rows of any partitions, then
    the group's pending page with ``text`` (``{n}``: the entries done)."""

    def one(c: Call[Entries]) -> dict[str, Any]:
        group = c.input.group.strip()
        ids = run(**c.write() | {"group": group})
        return {"group": group, "partition": c.input.partition, done: ids}

    def answer(c: Call[Checked], n: int) -> HttpResponse:
        group = c.input.group.strip()
        query = f"group={group}" if group else ""
        return c.back(text.format(n=n, consumer=c.input.consumer), "pending", query=query)

    def page_run(c: Call[Checked]) -> int:
        return _checked(c, run, kind)

    path = f"{PENDING}{what}/"
    page = Page(
        f"pending-{what}", path, "POST", answer=answer, input=Checked, run=page_run, early=False
    )
    return Operation(summary, "pending", action, kind, one, page=page)


class Target(msgspec.Struct):
    """Where the group moves to."""

    kind: Annotated[str, doc("latest, earliest, time or id")]
    value: Annotated[str | int | None, doc("the time or id (time and id kinds)")] = None


class Plan(msgspec.Struct):
    """The target, and the partitions to move."""

    target: Target
    partitions: Annotated[list[int] | str, doc('partition numbers, or "all"')] = "all"


class Move(Plan):
    """The target, the partitions, and the confirmation."""

    reason: Why = ""
    confirm: Annotated[str, doc("the group name, typed again")] = ""
    force: Annotated[bool, doc("move a group a pipeline moves (refused, 409, without it)")] = False


def _position_fields(data: QueryDict) -> dict[str, Any]:
    """The form as the page shows it again: kind, its value, scope and partitions text."""
    kind = data.get("kind", "") or "earliest"
    value = data.get(f"{kind}_value", "") if kind in ("time", "id") else ""
    scope = data.get("scope", "all")
    partitions = "all" if scope != "some" else data.get("partitions", "")
    return {"kind": kind, "value": value, "partitions": partitions, "scope": scope}


def _position_form(data: QueryDict, read: dict[str, Any]) -> dict[str, Any]:
    form = _position_fields(data)
    return read | {
        "target": {"kind": form["kind"], "value": form["value"]},
        "partitions": form["partitions"],
    }


def _position_context(key: str) -> Any:
    """The page's context: the form shown again, and the plan or the result under ``key``."""

    def context(call: Call[Any], result: Any) -> dict[str, Any]:
        form = _position_fields(call.form)
        return {"form": form, "kinds": KINDS} | ({key: result} if key else {})

    return context


def _move(c: Call[Any]) -> position_sel.GroupMove:
    """The move the URL's group and the input name."""
    target = c.input.target
    return position_sel.GroupMove.of(c.url["group"], target.kind, target.value, c.input.partitions)


def _plan(c: Call[Plan]) -> dict[str, Any]:
    move = _move(c)
    return position_sel.position_plan_get(user=c.user, cluster=c.cluster, topic=c.topic, move=move)


def _moved(c: Call[Move]) -> dict[str, Any]:
    i = c.input
    move = _move(c)
    return position_svc.set_group_position(
        c.actor, move, reason=i.reason, confirm=i.confirm, force=i.force
    )


OPERATIONS = (
    Operation(
        "Pending entries of a group (live read; group required)",
        "pending",
        Action.VIEW,
        PelQuery,
        lambda c: pending_sel.pending_json(**c.read()),
        page=Page(
            "pending",
            PENDING,
            template="dashboard/pending.html#table",
            context=_pending_page,
            input=PelPage,
            run=lambda c: pending_sel.pending_page_get(**c.read()),
        ),
    ),
    _pending(
        "Claim pending entries of one partition to a consumer",
        Action.CLAIM,
        Claim,
        svc.pending_claim,
        "claim",
        "claimed",
        "Claimed {n} entries to {consumer}.",
    ),
    _pending(
        "Dead-letter pending entries of one partition",
        Action.MOVE_TO_DLQ,
        Entries,
        svc.pending_move_to_dlq,
        "move-to-dlq",
        "moved",
        "Moved {n} entries to the DLQ.",
    ),
    Operation(
        "The position form",
        "groups",
        Action.SET_POSITION,
        page=Page(
            "group-position", POSITION, template=POSITION_TEMPLATE, context=_position_context("")
        ),
        twin="api-group-position-plan",
    ),
    Operation(
        "Dry run of a group position move",
        "groups",
        Action.SET_POSITION,
        Plan,
        _plan,
        page=Page(
            "group-position-plan",
            POSITION + "plan/",
            template=POSITION_TEMPLATE + "#plan",
            form=_position_form,
            context=_position_context("plan"),
        ),
        api=Api(method="POST"),
    ),
    Operation(
        "Move a group's position (skip or reprocess)",
        "groups",
        Action.SET_POSITION,
        Move,
        _moved,
        page=Page(
            "group-position-move",
            POSITION + "move/",
            "POST",
            POSITION_TEMPLATE,
            form=_position_form,
            context=_position_context("result"),
        ),
        api=Api("api-group-position", api_path(POSITION)),
    ),
)
