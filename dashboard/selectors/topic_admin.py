"""Topic and group administration, the reads: the admin page, and the dry runs of a trim, a
topic delete and a group delete (nothing is written; ``manage_topics`` / ``manage_groups``).

A trim's dry run is the trim's own script planning its first round on each partition
(``retention_trim.lua``, :func:`mqcore.retention.trim.topic_trims` with ``dry_run``): what
would go, and what the retention floor keeps (the entries the rules wanted but a group has
not consumed, and that group). The delete dry runs are what the delete checks read
(:meth:`mqcore.topics.Topics.group_use`). The writes are :mod:`dashboard.services.topic_admin`.
"""

from __future__ import annotations

from typing import Any

from dashboard import clusters
from dashboard.permissions import Action, require_action
from dashboard.selectors.pages.snapshot import topic_visible_require
from mqcore.admin import PositionTarget
from mqcore.codec import validate_id
from mqcore.errors import UnknownGroupError
from mqcore.retention import PartitionTrim, RetentionPolicy
from mqcore.retention.trim import topic_trims
from mqcore.topics import GROUP_STARTS, Topics
from mqcore.validate import checked_name

__all__ = [
    "admin_page_get",
    "group_delete_plan_get",
    "group_start",
    "topic_delete_plan_get",
    "trim_plan_get",
    "trim_rules",
    "trims_json",
    "writer_topics",
]


def writer_topics(cluster: str) -> Topics:
    """mqcore's topic administration on ``cluster``'s writer (ReadOnlyClusterError, a 403,
    on a read-only cluster)."""
    admin = clusters.writer_admin(cluster)
    return Topics(admin.config, client=admin.client)


def _reader_topics(cluster: str) -> Topics:
    admin = clusters.admin(cluster)
    return Topics(admin.config, client=admin.client)


def _require(user: Any, action: Action, cluster: str, topic: str) -> None:
    require_action(user, action, cluster=cluster, topic=topic)
    topic_visible_require(user, cluster, topic)


def trim_rules(maxlen: int | None = None, min_id: str = "", max_age: str = "") -> dict[str, Any]:
    """The trim's rules as :func:`~mqcore.retention.trim.topic_trims` takes them (ValueError,
    a 400, when none or one is malformed): ``max_age`` a duration such as ``7d``."""
    if isinstance(maxlen, bool) or (maxlen is not None and maxlen < 0):
        raise ValueError(f"maxlen: a whole number of entries, not {maxlen!r}")
    min_id = (min_id or "").strip()
    age = RetentionPolicy.build(max_age=(max_age or "").strip()).max_age_ms
    if maxlen is None and not min_id and age is None:
        raise ValueError("give a trim rule: maxlen, min_id or max_age")
    if min_id:
        validate_id(min_id)
    return {"maxlen": maxlen, "min_id": min_id or None, "min_age_ms": age}


def trims_json(done: list[PartitionTrim]) -> dict[str, Any]:
    """Totals and the partitions a trim touched or the floor held back."""
    rows = [t.as_dict() for t in done if t.deleted or t.held_by]
    return {
        "deleted": sum(t.deleted for t in done),
        "held": sum(t.held for t in done),
        "more": any(t.more for t in done),
        "partitions": rows,
    }


def group_start(start: str, time: str) -> dict[str, Any]:
    """A new group's start as :meth:`~mqcore.topics.Topics.create_group` takes it: latest,
    earliest, or a time (epoch ms or ISO-8601)."""
    start = (start or "latest").strip().lower()
    if start not in GROUP_STARTS:
        raise ValueError(f"start: latest, earliest or time, not {start[:20]!r}")
    if start != "time":
        return {"start": start, "at_ms": None}
    if not (time or "").strip():
        raise ValueError("a time start needs a time")
    return {"start": "time", "at_ms": PositionTarget.of("time", time).value}


def admin_page_get(*, user: Any, cluster: str, topic: str) -> dict[str, Any]:
    """The topic's admin page: its partitions and groups, and the cluster's retention."""
    _require(user, Action.MANAGE_TOPICS, cluster, topic)
    topics = _reader_topics(cluster)
    info = topics.describe(topic)
    return {
        "partitions": info.partitions,
        "length": info.length,
        "groups": [u.as_dict() for u in topics.group_use(topic)],
        "retention": clusters.retention_policy(cluster).as_dict(),
    }


def trim_plan_get(
    *,
    user: Any,
    cluster: str,
    topic: str,
    maxlen: int | None = None,
    min_id: str = "",
    max_age: str = "",
) -> dict[str, Any]:
    """Dry run of a trim: per partition, what the first round would delete and what the
    retention floor keeps (``held``, by ``held_by``); ``more``: a round's worth or more."""
    _require(user, Action.MANAGE_TOPICS, cluster, topic)
    rules = trim_rules(maxlen, min_id, max_age)
    done = topic_trims(writer_topics(cluster), topic, **rules, dry_run=True)
    return {"topic": topic, "rules": rules, **trims_json(done)}


def topic_delete_plan_get(*, user: Any, cluster: str, topic: str) -> dict[str, Any]:
    """Dry run of a topic delete: each group's unread, pending and leased partitions, and
    whether the delete is refused without force."""
    _require(user, Action.MANAGE_TOPICS, cluster, topic)
    topics = _reader_topics(cluster)
    info = topics.describe(topic)
    use = topics.group_use(topic)
    waiting = [u.group for u in use if u.waiting]
    return {
        "topic": topic,
        "partitions": info.partitions,
        "length": info.length,
        "dlq_length": info.dlq_length,
        "groups": [u.as_dict() for u in use],
        "waiting": waiting,
        "needs_force": bool(waiting),
    }


def group_delete_plan_get(*, user: Any, cluster: str, topic: str, group: str) -> dict[str, Any]:
    """Dry run of a group delete: its partitions, leased partitions and pending entries, and
    whether the delete is refused without force (UnknownGroupError, a 404, when absent)."""
    _require(user, Action.MANAGE_GROUPS, cluster, topic)
    checked_name("group", group)
    use = next((u for u in _reader_topics(cluster).group_use(topic) if u.group == group), None)
    if use is None:
        raise UnknownGroupError(f"group {group!r} is not on topic {topic!r}")
    return {
        "topic": topic,
        **use.as_dict(),
        "needs_force": use.pending > 0 or use.leased > 0,
    }
