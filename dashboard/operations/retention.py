"""A topic's retention tab: floors, each rule's next delete, a what-if (the rules typed in
the form; none: the cluster's), and "trim now". The form and the query name opt-out groups
comma-separated, the JSON as a list."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from django.http import QueryDict

from dashboard.operations.declare import FORM_TRUE, Call, Operation, Page, Why, doc, route
from dashboard.permissions import Action
from dashboard.selectors.pages.params import parse_int
from dashboard.selectors.retention import policy_from_form, retention_get
from dashboard.services import retention as svc

__all__ = ["OPERATIONS"]

TEMPLATE = "dashboard/retention.html"
PAGE = route("retention")
GROUPS = "groups whose unread entries may go (comma-separated in a query)"


class Rules(msgspec.Struct):
    """Retention rules (none: the cluster's)."""

    maxlen: Annotated[int, doc("keep at most this many entries per partition")] | None = None
    max_age: Annotated[str, doc("delete entries older than, e.g. 7d")] = ""
    consumed: Annotated[bool, doc("delete entries every group read and acked")] = False
    ignore_groups: Annotated[list[str], doc(GROUPS)] = []


class WhatIf(Rules):
    """What the rules would delete (a what-if), a page of partitions."""

    page: Annotated[int, doc("32 partitions a page", ge=1, le=100_000)] = 1


class Trim(Rules):
    """The rules to trim by, the topic name typed again, and why."""

    reason: Why = ""
    confirm: Annotated[str, doc("the topic name, again")] = ""


def _policy(rules: Rules) -> Any:
    groups = [g for text in rules.ignore_groups for g in text.replace(",", " ").split()]
    fields = {"maxlen": rules.maxlen, "max_age": rules.max_age, "consumed": rules.consumed}
    return policy_from_form(fields | {"ignore_groups": groups})


def _trim(c: Call[Trim]) -> Any:
    """The service given the input's rules as one policy."""
    kw = {k: v for k, v in c.write().items() if k not in Rules.__struct_fields__}
    return svc.trim_topic(**kw, policy=_policy(c.input))


def _view(c: Call[Any], page: int | None = None) -> dict[str, Any]:
    """The view by the input's rules; the trim page's shows the page its query names."""
    page = page or parse_int(c.request.GET.get("page"), "page", default=1, minimum=1) or 1
    policy = _policy(c.input)
    return retention_get(user=c.user, cluster=c.cluster, topic=c.topic, policy=policy, page=page)


def _fields(data: QueryDict) -> dict[str, Any]:
    """The form as the page shows it again."""
    text = {f: (data.get(f) or "").strip() for f in ("maxlen", "max_age", "ignore_groups")}
    return text | {"consumed": data.get("consumed", "") in FORM_TRUE}


def _context(c: Call[Any], result: Any) -> dict[str, Any]:
    trimmed = c.request.method == "POST"
    return {"form": _fields(c.form), "can": c.can} | (
        {"d": _view(c), "result": result} if trimmed else {"d": result}
    )


OPERATIONS = (
    Operation(
        "Per partition: group floors and what each retention rule would delete next",
        "retention",
        Action.VIEW,
        WhatIf,
        lambda c: _view(c, c.input.page),
        page=Page("topic-retention", PAGE, template=TEMPLATE + "#view", context=_context),
    ),
    Operation(
        "Trim the topic's partitions now (never past a group's unread entries)",
        "retention",
        Action.PURGE,
        Trim,
        _trim,
        page=Page("topic-retention-trim", PAGE + "trim/", "POST", TEMPLATE, context=_context),
        early=False,
    ),
)
