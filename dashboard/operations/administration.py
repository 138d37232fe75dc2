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
ADMIN_PAGE = "topic-admin"
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


def _created(c: Call[NewTopic], result: dict[str, Any]) -> HttpResponse:
    text = "Created topic {topic} with {partitions} partitions.".format(**result)
    return c.back(text, ADMIN_PAGE, "cluster", topic=result["topic"])


def _admin(summary: str, *declared: Any, groups: bool = False, **more: Any) -> Operation:
    """An operation of this area: on topics (``manage_topics``) or their ``groups``."""
    action = Action.MANAGE_GROUPS if groups else Action.MANAGE_TOPICS
    return Operation(summary, "admin", action, *declared, **more)


def _post(name: str, path: str, text: str, to: str = ADMIN_PAGE, *keys: str) -> Page:
    """A write's page at ``path``: ``text`` and the page ``to`` (see :func:`back`)."""
    return Page(name, path, "POST", back=(text, to, *keys))


def _dry_run(name: str, path: str, region: str, key: str = "") -> Page:
    """A dry run's page: the ``region`` of the plan page, with the plan under ``key`` (the
    region's name by default) and the form to carry on."""

    def context(c: Call[Any], result: Any) -> dict[str, Any]:
        return {key or region: result, "form": c.form}

    return Page(name, path, template=f"{PLAN_TEMPLATE}#{region}", context=context)


OPERATIONS = (
    _admin(
        "The form to create a topic",
        page=Page("topic-create-form", CREATE, template="dashboard/topic_create.html"),
        twin="api-topic-create",
        early="somewhere",
    ),
    _admin(
        "Create a topic (refused, 409, when it exists)",
        NewTopic,
        lambda c: svc.topic_create(**c.write()),
        page=Page("topic-create", CREATE + "create/", "POST", answer=_created),
        api=Api(status=201),
        early="somewhere",
    ),
    _admin(
        "A topic's administration: partitions, groups (unread, pending, leased), retention",
        run=lambda c: sel.admin_page_get(**c.read()),
        page=Page(
            ADMIN_PAGE, ADMIN, template=PAGE_TEMPLATE, context=lambda c, d: {"d": d, "can": c.can}
        ),
    ),
    _admin(
        "Grow a topic's partitions (never shrinks)",
        Growth,
        lambda c: svc.topic_grow(**c.write()),
        page=_post(
            "topic-grow", ADMIN + "grow/", "Grew {topic} from {from} to {partitions} partitions."
        ),
    ),
    _admin(
        "Dry run of a trim: what would go, what the retention floor keeps",
        TrimPlan,
        lambda c: sel.trim_plan_get(**c.read()),
        page=_dry_run("topic-trim-plan", ADMIN + "trim/plan/", "trim"),
        api=Api(method="POST"),
    ),
    _admin(
        "Trim a topic by MAXLEN, MINID or age (never past a group's unread entries)",
        TopicTrim,
        lambda c: svc.topic_trim(**c.write()),
        page=_post("topic-trim", ADMIN + "trim/", "Trimmed {deleted} entries from {topic}."),
    ),
    _admin(
        "Dry run of a topic delete: each group's unread, pending and leased partitions",
        run=lambda c: sel.topic_delete_plan_get(**c.read()),
        page=_dry_run("topic-delete-plan", ADMIN + "delete/plan/", "delete"),
        api=Api(method="POST"),
    ),
    _admin(
        "Delete a topic (refused, 409, while a group has unread or pending entries)",
        Deletion,
        lambda c: svc.topic_delete(**c.write()),
        page=_post(
            "topic-delete", ADMIN + "delete/", "Deleted topic {topic}.", "overview", "cluster"
        ),
    ),
    _admin(
        "Create a consumer group at latest, earliest or a time",
        NewGroup,
        lambda c: svc.group_create(**c.write()),
        page=_post(
            "group-create", ADMIN + "groups/", "Created group {group} on {topic} at {start}."
        ),
        api=Api(status=201),
        groups=True,
    ),
    _admin(
        "Dry run of a group delete: its leased partitions and pending entries",
        run=lambda c: sel.group_delete_plan_get(**c.read()),
        page=_dry_run("group-delete-plan", GROUP + "delete/plan/", "group", "group_plan"),
        api=Api(method="POST"),
        groups=True,
    ),
    _admin(
        "Delete a consumer group (refused, 409, while it holds leases or pending entries)",
        Deletion,
        lambda c: svc.group_delete(**c.write()),
        page=_post("group-delete", GROUP + "delete/", "Deleted group {group} from {topic}."),
        groups=True,
    ),
)
