"""Topic and consumer-group administration: create, grow, trim and delete topics; create and
delete groups (Admin: ``manage_topics``, ``manage_groups``).

Each write checks the permission on the topic it names (a new topic's name too: an Admin
scoped to ``orders-*`` creates ``orders-eu`` and nothing else), its input, the typed
confirmation of a destructive one, then runs mqcore's own function (:mod:`mqcore.topics`,
:func:`mqcore.retention.trim.topic_trims`) in ``with audited(...)``. mqcore keeps the
safety rules: a trim never passes the retention floor (there is no force for it, as in
``mqcore topic trim``), a topic delete is refused while a group has unread or pending
entries and a group delete while the group holds a lease or pending entries, unless
``force``. The dry runs are :mod:`dashboard.selectors.topic_admin`.
"""

from __future__ import annotations

from typing import Any

from dashboard import clusters
from dashboard.models import AuditEventType
from dashboard.permissions import Action
from dashboard.selectors.pages.snapshot import topic_visible_require
from dashboard.selectors.topic_admin import group_start, trim_rules, trims_json, writer_topics
from dashboard.services.audit import Actor, audited, require_confirmation, require_reason
from mqcore.retention.trim import topic_trims
from mqcore.validate import checked_name, validate_topic

__all__ = [
    "group_create",
    "group_delete",
    "topic_create",
    "topic_delete",
    "topic_grow",
    "topic_trim",
]


def _require(actor: Actor, action: Action) -> None:
    actor.require(action)
    topic_visible_require(actor.user, actor.cluster, actor.topic)


def topic_create(
    actor: Actor, *, topic: str, partitions: int, groups: list[str], reason: str
) -> dict[str, Any]:
    """Create ``topic`` (refused, 409, when it exists) with ``groups`` (default-group when
    none) at the start of each partition, as ``mqcore topic create`` does."""
    topic = (topic or "").strip()
    validate_topic(topic)
    actor = actor.at(topic=topic)
    _require(actor, Action.MANAGE_TOPICS)
    names = [checked_name("group", g.strip()) for g in groups if g.strip()] or ["default-group"]
    reason = require_reason(reason)
    topics = writer_topics(actor.cluster)
    detail = {"partitions": partitions, "groups": names}
    with audited(actor, AuditEventType.TOPIC_CREATE, reason=reason, detail=detail) as audit:
        info = topics.create(topic, partitions, groups=names, new=True)
        audit.set("created", counts={"partitions": info.partitions}, detail=detail)
    retention = clusters.retention_policy(actor.cluster).as_dict()
    return {"topic": topic, "partitions": info.partitions, "groups": names, "retention": retention}


def topic_grow(actor: Actor, *, partitions: int, reason: str, confirm: str) -> dict[str, Any]:
    """Raise the topic's partition count (never lowers it: keys route by the count, so the
    topic name is typed to confirm)."""
    _require(actor, Action.MANAGE_TOPICS)
    topic = actor.topic
    reason = require_reason(reason)
    require_confirmation(confirm, topic, "type the exact topic name to confirm the growth")
    topics = writer_topics(actor.cluster)
    current = topics.partition_count(topic)
    if partitions <= current:
        raise ValueError(f"topic {topic!r} has {current} partitions: grow to more")
    detail = {"from": current, "to": partitions}
    with audited(actor, AuditEventType.TOPIC_GROW, reason=reason, detail=detail) as audit:
        info = topics.grow(topic, partitions)
        audit.set("grown", counts={"partitions": info.partitions})
    return {"topic": topic, "from": current, "partitions": info.partitions}


def topic_trim(actor: Actor, *, reason: str, confirm: str, **rules: Any) -> dict[str, Any]:
    """Trim the topic's partitions by the ``rules`` of :func:`trim_rules` (MAXLEN, MINID
    and/or age), never past the retention floor (the entries a group has not consumed stay)."""
    _require(actor, Action.MANAGE_TOPICS)
    topic = actor.topic
    rules = trim_rules(**rules)
    reason = require_reason(reason)
    require_confirmation(confirm, topic, "type the exact topic name to confirm the trim")
    topics = writer_topics(actor.cluster)
    topics.partition_count(topic)  # unknown topic: nothing audited, nothing trimmed
    with audited(actor, AuditEventType.TOPIC_TRIM, reason=reason, detail={"rules": rules}) as audit:
        done = trims_json(topic_trims(topics, topic, **rules))
        rows = done["partitions"]
        audit.set("trimmed", counts={"deleted": done["deleted"]}, detail={"partitions": rows})
    return {"topic": topic, "rules": rules, **done}


def topic_delete(actor: Actor, *, force: bool = False, reason: str, confirm: str) -> dict[str, Any]:
    """Delete every key of the topic; refused (409) while a group has unread or pending
    entries, unless ``force``; the topic name typed to confirm either way."""
    _require(actor, Action.MANAGE_TOPICS)
    topic = actor.topic
    reason = require_reason(reason)
    require_confirmation(confirm, topic, "type the exact topic name to confirm the delete")
    topics = writer_topics(actor.cluster)
    topics.partition_count(topic)
    detail = {"force": bool(force)}
    with audited(actor, AuditEventType.TOPIC_DELETE, reason=reason, detail=detail) as audit:
        groups = [u.as_dict() for u in topics.delete_unused(topic, force=bool(force))]
        audit.set("deleted", counts={"groups": len(groups)}, detail={"groups": groups})
    return {"topic": topic, "deleted": True, "forced": bool(force), "groups": groups}


def group_create(
    actor: Actor, *, group: str, start: str = "latest", time: str = "", reason: str
) -> dict[str, Any]:
    """Create ``group`` on every partition of the topic, at ``latest``, ``earliest`` or
    ``time`` (its first entry: the first at or after it); refused (409) when it exists."""
    _require(actor, Action.MANAGE_GROUPS)
    group = checked_name("group", (group or "").strip())
    begin = group_start(start, time)
    reason = require_reason(reason)
    topics = writer_topics(actor.cluster)
    detail = {"group": group, **begin}
    with audited(actor, AuditEventType.GROUP_CREATE, reason=reason, detail=detail) as audit:
        topics.create_group(actor.topic, group, **begin)
        audit.set("created", detail=detail)
    return {"topic": actor.topic, "group": group, **begin}


def group_delete(
    actor: Actor, *, group: str, force: bool = False, reason: str, confirm: str
) -> dict[str, Any]:
    """Delete ``group`` from the topic with its leases and heartbeats; refused (409) while
    it holds a lease or pending entries, unless ``force``; the group name typed to confirm.
    Bounded and idempotent (:meth:`mqcore.topics.Topics.delete_group`: a partition at a
    time, pending entries acked in chunks first): one interrupted midway is repeated."""
    _require(actor, Action.MANAGE_GROUPS)
    checked_name("group", group)
    reason = require_reason(reason)
    require_confirmation(confirm, group, "type the exact group name to confirm the delete")
    topics = writer_topics(actor.cluster)
    detail = {"group": group, "force": bool(force)}
    with audited(actor, AuditEventType.GROUP_DELETE, reason=reason, detail=detail) as audit:
        done = topics.delete_group(actor.topic, group, force=bool(force))
        audit.set("deleted", counts={"pending": done.pending}, detail=done.as_dict())
    return {"topic": actor.topic, **done.as_dict()}
