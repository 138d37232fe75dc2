"""Topic and consumer-group administration (Admin): create a topic (the cluster's form), and
on a topic's admin page grow it, trim it (a dry run first), delete it (a dry run first),
create a group and delete one (a dry run first).

Each destructive write has a dry run, an htmx partial on the admin page (the plan pages'
``#trim``, ``#delete`` and ``#group`` regions of ``admin_plan.html``) whose form carries
the rules on to the write with the typed confirmation; their API twins are POSTs, as the
position's dry run. A new topic's name is in the body, not the URL: its form and create
ask for ``manage_topics`` on some scope first, then the service on the name itself.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from django.http import HttpResponse

from dashboard.operations.declare import Api, Call, Operation, Page, Reason, Why, doc, route
from dashboard.permissions import Action
from dashboard.selectors import topic_admin as sel
from dashboard.services import topic_admin as svc

__all__ = ["OPERATIONS"]

ADMIN = route("admin")
GROUP = route("groups/<str:group>")
CREATE = route("admin/topics", topic=False)
PAGE_TEMPLATE = "dashboard/topic_admin.html"
PLAN_TEMPLATE = "dashboard/admin_plan.html"
Confirm = Annotated[str, doc("the topic name, typed again")]
Force = Annotated[bool, doc("delete even so (refused, 409, without it)")]


class NewTopic(Reason, kw_only=True):
    """The new topic: its name, partitions and groups."""

    topic: Annotated[str, doc("the new topic's name")]
    partitions: Annotated[int, doc("partitions", ge=1, le=4096)] = 1
    groups: Annotated[list[str], doc("consumer groups (default: default-group)")] = []


class Growth(Reason, kw_only=True):
    """The new partition count (more than now), and the topic typed again."""

    partitions: Annotated[int, doc("the new partition count", ge=1, le=4096)]
    confirm: Confirm = ""


class TrimPlan(msgspec.Struct):
    """What to trim: at least one rule (never past a group's unread entries)."""

    maxlen: Annotated[int, doc("keep at most this many entries per partition", ge=0)] | None = None
    min_id: Annotated[str, doc("delete entries below this id (MINID)")] = ""
    max_age: Annotated[str, doc("delete entries older than, e.g. 7d")] = ""


class TopicTrim(TrimPlan):
    """The rules, the topic typed again, and why."""

    reason: Why = ""
    confirm: Confirm = ""


class Deletion(Reason):
    """The name typed again, and ``force`` when groups still have entries to read."""

    confirm: Annotated[str, doc("the topic (or group) name, typed again")] = ""
    force: Force = False


class NewGroup(Reason, kw_only=True):
    """The new group and where it starts."""

    group: Annotated[str, doc("the new group's name")]
    start: Annotated[str, doc("latest (default), earliest or time")] = "latest"
    time: Annotated[str, doc("a time start: ISO-8601 or epoch ms")] = ""


def _done(text: str, to: str = "topic-admin") -> Any:
    """A page's answer: ``text`` (formatted with the result) and the topic's admin page."""

    def answer(c: Call[Any], result: dict[str, Any]) -> HttpResponse:
        return c.back(text.format(**result), to)

    return answer


def _created(c: Call[NewTopic], result: dict[str, Any]) -> HttpResponse:
    return c.back(
        "Created topic {topic} with {partitions} partitions.".format(**result),
        "topic-admin",
        "cluster",
        topic=result["topic"],
    )


def _deleted(c: Call[Deletion], result: dict[str, Any]) -> HttpResponse:
    return c.back(f"Deleted topic {result['topic']}.", "overview", "cluster")


def _plan(key: str) -> Any:
    """A dry run's context: the plan under ``key``, and the form to carry on."""

    def context(c: Call[Any], result: Any) -> dict[str, Any]:
        return {key: result, "form": c.form}

    return context


OPERATIONS = (
    Operation(
        "The form to create a topic",
        "admin",
        Action.MANAGE_TOPICS,
        page=Page("topic-create-form", CREATE, template="dashboard/topic_create.html"),
        twin="api-topic-create",
        early="somewhere",
    ),
    Operation(
        "Create a topic (refused, 409, when it exists)",
        "admin",
        Action.MANAGE_TOPICS,
        NewTopic,
        lambda c: svc.topic_create(**c.write()),
        page=Page("topic-create", CREATE + "create/", "POST", answer=_created),
        api=Api(status=201),
        early="somewhere",
    ),
    Operation(
        "A topic's administration: partitions, groups (unread, pending, leased), retention",
        "admin",
        Action.MANAGE_TOPICS,
        run=lambda c: sel.admin_page_get(**c.read()),
        page=Page(
            "topic-admin",
            ADMIN,
            template=PAGE_TEMPLATE,
            context=lambda c, d: {"d": d, "can": c.can},
        ),
    ),
    Operation(
        "Grow a topic's partitions (never shrinks)",
        "admin",
        Action.MANAGE_TOPICS,
        Growth,
        lambda c: svc.topic_grow(**c.write()),
        page=Page(
            "topic-grow",
            ADMIN + "grow/",
            "POST",
            answer=_done("Grew {topic} from {from} to {partitions} partitions."),
        ),
    ),
    Operation(
        "Dry run of a trim: what would go, what the retention floor keeps",
        "admin",
        Action.MANAGE_TOPICS,
        TrimPlan,
        lambda c: sel.trim_plan_get(**c.read()),
        page=Page(
            "topic-trim-plan",
            ADMIN + "trim/plan/",
            template=PLAN_TEMPLATE + "#trim",
            context=_plan("trim"),
        ),
        api=Api(method="POST"),
    ),
    Operation(
        "Trim a topic by MAXLEN, MINID or age (never past a group's unread entries)",
        "admin",
        Action.MANAGE_TOPICS,
        TopicTrim,
        lambda c: svc.topic_trim(**c.write()),
        page=Page(
            "topic-trim",
            ADMIN + "trim/",
            "POST",
            answer=_done("Trimmed {deleted} entries from {topic}."),
        ),
    ),
    Operation(
        "Dry run of a topic delete: each group's unread, pending and leased partitions",
        "admin",
        Action.MANAGE_TOPICS,
        run=lambda c: sel.topic_delete_plan_get(**c.read()),
        page=Page(
            "topic-delete-plan",
            ADMIN + "delete/plan/",
            template=PLAN_TEMPLATE + "#delete",
            context=_plan("delete"),
        ),
        api=Api(method="POST"),
    ),
    Operation(
        "Delete a topic (refused, 409, while a group has unread or pending entries)",
        "admin",
        Action.MANAGE_TOPICS,
        Deletion,
        lambda c: svc.topic_delete(**c.write()),
        page=Page("topic-delete", ADMIN + "delete/", "POST", answer=_deleted),
    ),
    Operation(
        "Create a consumer group at latest, earliest or a time",
        "admin",
        Action.MANAGE_GROUPS,
        NewGroup,
        lambda c: svc.group_create(**c.write()),
        page=Page(
            "group-create",
            ADMIN + "groups/",
            "POST",
            answer=_done("Created group {group} on {topic} at {start}."),
        ),
        api=Api(status=201),
    ),
    Operation(
        "Dry run of a group delete: its leased partitions and pending entries",
        "admin",
        Action.MANAGE_GROUPS,
        run=lambda c: sel.group_delete_plan_get(**c.read()),
        page=Page(
            "group-delete-plan",
            GROUP + "delete/plan/",
            template=PLAN_TEMPLATE + "#group",
            context=_plan("group_plan"),
        ),
        api=Api(method="POST"),
    ),
    Operation(
        "Delete a consumer group (refused, 409, while it holds leases or pending entries)",
        "admin",
        Action.MANAGE_GROUPS,
        Deletion,
        lambda c: svc.group_delete(**c.write()),
        page=Page(
            "group-delete",
            GROUP + "delete/",
            "POST",
            answer=_done("Deleted group {group} from {topic}."),
        ),
    ),
)
