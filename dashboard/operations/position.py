"""Group position (Admin only): the form, its dry run (an htmx partial) and the move. The
form's ``kind``, ``time_value`` / ``id_value``, ``scope`` (``all``, or ``some`` with the
``partitions`` text) are read into the JSON's ``target`` and ``partitions``."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from django.http import QueryDict

from dashboard.operations.declare import Api, Call, Operation, Page, Why, api_path, doc, route
from dashboard.permissions import Action
from dashboard.selectors import position as sel
from dashboard.services import position as svc

__all__ = ["OPERATIONS"]

KINDS = ("earliest", "latest", "time", "id")
TEMPLATE = "dashboard/position.html"
PAGE = route("groups/<str:group>/position")


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


def _fields(data: QueryDict) -> dict[str, Any]:
    """The form as the page shows it again: kind, its value, scope and partitions text."""
    kind = data.get("kind", "") or "earliest"
    value = data.get(f"{kind}_value", "") if kind in ("time", "id") else ""
    scope = data.get("scope", "all")
    partitions = "all" if scope != "some" else data.get("partitions", "")
    return {"kind": kind, "value": value, "partitions": partitions, "scope": scope}


def _form(data: QueryDict, read: dict[str, Any]) -> dict[str, Any]:
    form = _fields(data)
    return read | {
        "target": {"kind": form["kind"], "value": form["value"]},
        "partitions": form["partitions"],
    }


def _context(key: str) -> Any:
    """The page's context: the form shown again, and the plan or the result under ``key``."""

    def context(call: Call[Any], result: Any) -> dict[str, Any]:
        form = _fields(call.request.POST if call.request.method == "POST" else call.request.GET)
        return {"form": form, "kinds": KINDS} | ({key: result} if key else {})

    return context


def _flat(args: dict[str, Any]) -> dict[str, Any]:
    """The input's target spread into ``kind`` and ``value``, as selector and service take it."""
    target = args.pop("target")
    return args | {"kind": target.kind, "value": target.value}


OPERATIONS = (
    Operation(
        "The position form",
        "groups",
        Action.SET_POSITION,
        page=Page("group-position", PAGE, template=TEMPLATE, context=_context("")),
        twin="api-group-position-plan",
    ),
    Operation(
        "Dry run of a group position move",
        "groups",
        Action.SET_POSITION,
        Plan,
        lambda c: sel.position_plan_get(**_flat(c.read())),
        page=Page(
            "group-position-plan",
            PAGE + "plan/",
            template=TEMPLATE + "#plan",
            form=_form,
            context=_context("plan"),
        ),
        api=Api(method="POST"),
    ),
    Operation(
        "Move a group's position (skip or reprocess)",
        "groups",
        Action.SET_POSITION,
        Move,
        lambda c: svc.set_group_position(**_flat(c.write())),
        page=Page(
            "group-position-move",
            PAGE + "move/",
            "POST",
            TEMPLATE,
            form=_form,
            context=_context("result"),
        ),
        api=Api("api-group-position", api_path(PAGE)),
    ),
)
