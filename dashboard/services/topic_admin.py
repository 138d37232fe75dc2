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
from dashboard.permissions import Action, require_action
from dashboard.selectors.pages.snapshot import topic_visible_require
from dashboard.selectors.topic_admin import group_start, trim_rules, trims_json, writer_topics
from dashboard.services.audit import Origin, audited, require_confirmation, require_reason
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


def _require(user: Any, action: Action, cluster: str, topic: str) -> None:
    require_action(user, action, cluster=cluster, topic=topic)
    topic_visible_require(user, cluster, topic)


def topic_create(
    *,
    acting_user: Any,
    cluster: str,
    topic: str,
    partitions: int,
    groups: list[str],
    reason: str,
    origin: Origin | None = None,
) -> dict[str, Any]:
    """Create ``topic`` (refused, 409, when it exists) with ``groups`` (default-group when
    none) at the start of each partition, as ``mqcore topic create`` does."""
    topic = (topic or "").strip()
    validate_topic(topic)
    _require(acting_user, Action.MANAGE_TOPICS, cluster, topic)
    names = [checked_name("group", g.strip()) for g in groups if g.strip()] or ["default-group"]
    reason = require_reason(reason)
    topics = writer_topics(cluster)
    detail = {"partitions": partitions, "groups": names}
    with audited(
        acting_user=acting_user,
        event_type=AuditEventType.TOPIC_CREATE,
        origin=origin,
        cluster=cluster,
        topic=topic,
        reason=reason,
        detail=detail,
    ) as audit:
        info = topics.create(topic, partitions, groups=names, new=True)
        audit.set("created", counts={"partitions": info.partitions}, detail=detail)
    retention = clusters.retention_policy(cluster).as_dict()
    return {"topic": topic, "partitions": info.partitions, "groups": names, "retention": retention}


def topic_grow(
    *,
    acting_user: Any,
    cluster: str,
    topic: str,
    partitions: int,
    reason: str,
    confirm: str,
    origin: Origin | None = None,
) -> dict[str, Any]:
    """Raise ``topic``'s partition count (never lowers it: keys route by the count, so the
    topic name is typed to confirm)."""
    _require(acting_user, Action.MANAGE_TOPICS, cluster, topic)
    reason = require_reason(reason)
    require_confirmation(confirm, topic, "type the exact topic name to confirm the growth")
    topics = writer_topics(cluster)
    current = topics.partition_count(topic)
    if partitions <= current:
        raise ValueError(f"topic {topic!r} has {current} partitions: grow to more")
    with audited(
        acting_user=acting_user,
        event_type=AuditEventType.TOPIC_GROW,
        origin=origin,
        cluster=cluster,
        topic=topic,
        reason=reason,
        detail={"from": current, "to": partitions},
    ) as audit:
        info = topics.grow(topic, partitions)
        audit.set("grown", counts={"partitions": info.partitions})
    return {"topic": topic, "from": current, "partitions": info.partitions}


def topic_trim(
    *,
    acting_user: Any,
    cluster: str,
    topic: str,
    maxlen: int | None = None,
    min_id: str = "",
    max_age: str = "",
    reason: str,
    confirm: str,
    origin: Origin | None = None,
) -> dict[str, Any]:
    """Trim ``topic``'s partitions by MAXLEN, MINID and/or age, never past the retention
    floor (the entries a group has not consumed stay)."""
    _require(acting_user, Action.MANAGE_TOPICS, cluster, topic)
    rules = trim_rules(maxlen, min_id, max_age)
    reason = require_reason(reason)
    require_confirmation(confirm, topic, "type the exact topic name to confirm the trim")
    topics = writer_topics(cluster)
    topics.partition_count(topic)  # unknown topic: nothing audited, nothing trimmed
    with audited(
        acting_user=acting_user,
        event_type=AuditEventType.TOPIC_TRIM,
        origin=origin,
        cluster=cluster,
        topic=topic,
        reason=reason,
        detail={"rules": rules},
    ) as audit:
        done = trims_json(topic_trims(topics, topic, **rules))
        rows = done["partitions"]
        audit.set("trimmed", counts={"deleted": done["deleted"]}, detail={"partitions": rows})
    return {"topic": topic, "rules": rules, **done}


def topic_delete(
    *,
    acting_user: Any,
    cluster: str,
    topic: str,
    force: bool = False,
    reason: str,
    confirm: str,
    origin: Origin | None = None,
) -> dict[str, Any]:
    """Delete every key of ``topic``; refused (409) while a group has unread or pending
    entries, unless ``force``; the topic name typed to confirm either way."""
    _require(acting_user, Action.MANAGE_TOPICS, cluster, topic)
    reason = require_reason(reason)
    require_confirmation(confirm, topic, "type the exact topic name to confirm the delete")
    topics = writer_topics(cluster)
    topics.partition_count(topic)
    with audited(
        acting_user=acting_user,
        event_type=AuditEventType.TOPIC_DELETE,
        origin=origin,
        cluster=cluster,
        topic=topic,
        reason=reason,
        detail={"force": bool(force)},
    ) as audit:
        groups = [u.as_dict() for u in topics.delete_unused(topic, force=bool(force))]
        audit.set("deleted", counts={"groups": len(groups)}, detail={"groups": groups})
    return {"topic": topic, "deleted": True, "forced": bool(force), "groups": groups}


def group_create(
    *,
    acting_user: Any,
    cluster: str,
    topic: str,
    group: str,
    start: str = "latest",
    time: str = "",
    reason: str,
    origin: Origin | None = None,
) -> dict[str, Any]:
    """Create ``group`` on every partition of ``topic``, at ``latest``, ``earliest`` or
    ``time`` (its first entry: the first at or after it); refused (409) when it exists."""
    _require(acting_user, Action.MANAGE_GROUPS, cluster, topic)
    group = checked_name("group", (group or "").strip())
    begin = group_start(start, time)
    reason = require_reason(reason)
    topics = writer_topics(cluster)
    with audited(
        acting_user=acting_user,
        event_type=AuditEventType.GROUP_CREATE,
        origin=origin,
        cluster=cluster,
        topic=topic,
        reason=reason,
        detail={"group": group, **begin},
    ) as audit:
        topics.create_group(topic, group, **begin)
        audit.set("created", detail={"group": group, **begin})
    return {"topic": topic, "group": group, **begin}


def group_delete(
    *,
    acting_user: Any,
    cluster: str,
    topic: str,
    group: str,
    force: bool = False,
    reason: str,
    confirm: str,
    origin: Origin | None = None,
) -> dict[str, Any]:
    """Delete ``group`` from ``topic`` with its leases and heartbeats; refused (409) while
    it holds a lease or pending entries, unless ``force``; the group name typed to confirm."""
    _require(acting_user, Action.MANAGE_GROUPS, cluster, topic)
    checked_name("group", group)
    reason = require_reason(reason)
    require_confirmation(confirm, group, "type the exact group name to confirm the delete")
    topics = writer_topics(cluster)
    with audited(
        acting_user=acting_user,
        event_type=AuditEventType.GROUP_DELETE,
        origin=origin,
        cluster=cluster,
        topic=topic,
        reason=reason,
        detail={"group": group, "force": bool(force)},
    ) as audit:
        done = topics.delete_group(topic, group, force=bool(force))
        audit.set("deleted", counts={"pending": done.pending}, detail=done.as_dict())
    return {"topic": topic, **done.as_dict()}
