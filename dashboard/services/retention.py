"""Trimming partition streams by retention rules: an operator's "trim now" and the beat's
housekeeper. Deleting entries needs the purge permission (Admin).

Permission, a reason and the topic name typed as confirmation, then the audit
intent row, :func:`mqcore.retention.housekeep` (never past a group's unread
entries, except the groups opted out) and the outcome row with what each partition
lost. The beat task trims every topic of a cluster that has rules configured, as
``system`` (origin ``housekeeper-...``), one intent and one outcome per run.
"""

from __future__ import annotations

from typing import Any

from dashboard import clusters
from dashboard.models import AuditEventType
from dashboard.permissions import Action
from dashboard.selectors.pages.snapshot import topic_visible_require
from dashboard.services.audit import (
    Actor,
    Audited,
    ConfirmationError,
    Origin,
    audited,
    require_confirmation,
    require_reason,
)
from mqcore.retention import PartitionTrim, RetentionPolicy, housekeep

__all__ = ["ConfirmationError", "housekeep_cluster", "trim_topic"]


def _trimmed(
    audit: Audited, done: list[PartitionTrim]
) -> tuple[dict[str, int], list[dict[str, Any]]]:
    """A trim's outcome (set on ``audit``): totals, and what each partition lost or kept."""
    rows = [t.as_dict() for t in done if t.deleted or t.held_by]
    counts = {"deleted": sum(t.deleted for t in done), "partitions": len(done)}
    audit.set("trimmed", counts=counts, detail={"partitions": rows})
    return counts, rows


def trim_topic(
    actor: Actor, *, policy: RetentionPolicy | None, reason: str, confirm: str
) -> dict[str, Any]:
    """Trim the actor's topic now by ``policy`` (None: the cluster's configured rules)."""
    actor.require(Action.PURGE)
    cluster, topic = actor.cluster, actor.topic
    topic_visible_require(actor.user, cluster, topic)
    used = policy if policy is not None else clusters.retention_policy(cluster)
    if not used.enabled:
        raise ValueError("no retention rule: give a maxlen, a max age or consumed")
    reason = require_reason(reason)
    require_confirmation(confirm, topic, "type the exact topic name to confirm the trim")
    admin = clusters.writer_admin(cluster)
    admin.partition_count(topic)  # unknown topic: nothing audited, nothing trimmed
    detail = {"policy": used.as_dict()}
    with audited(actor, AuditEventType.RETENTION_TRIM, reason=reason, detail=detail) as audit:
        done = housekeep(
            admin.client, admin.keys, used, topics=[topic], encoding=admin.config.encoding
        )
        counts, rows = _trimmed(audit, done)
    return {"topic": topic, "policy": used.as_dict(), **counts, "trims": rows}


def housekeep_cluster(cluster: str) -> dict[str, Any]:
    """The beat's run over ``cluster`` with its configured rules; skipped without rules."""
    policy = clusters.retention_policy(cluster)
    if not policy.enabled:
        return {"cluster": cluster, "skipped": "no retention rules configured"}
    if clusters.read_only(cluster):
        return {"cluster": cluster, "skipped": f"this console is read-only for cluster {cluster}"}
    admin = clusters.writer_admin(cluster)
    with audited(
        Actor(None, Origin.system("housekeeper"), cluster),
        AuditEventType.RETENTION_TRIM,
        reason="scheduled retention (housekeeper)",
        detail={"policy": policy.as_dict()},
    ) as audit:
        done = housekeep(admin.client, admin.keys, policy, encoding=admin.config.encoding)
        counts, _ = _trimmed(audit, done)
    return {"cluster": cluster, **counts}
