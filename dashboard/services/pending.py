"""Operator actions on pending entries: claim to a consumer, move to the DLQ (audited)."""

from __future__ import annotations

from typing import Any

from dashboard.clusters import writer_admin
from dashboard.models import AuditEventType
from dashboard.permissions import Action, require_action
from dashboard.services.audit import Origin, audited, require_reason

__all__ = ["MAX_IDS", "pending_claim", "pending_move_to_dlq"]

MAX_IDS = 1000


def _clean_ids(ids: list[str]) -> list[str]:
    cleaned = list(dict.fromkeys(i.strip() for i in ids if i and i.strip()))
    if not cleaned:
        raise ValueError("select at least one pending entry")
    if len(cleaned) > MAX_IDS:
        raise ValueError(f"at most {MAX_IDS} entries per action")
    return cleaned


def pending_claim(
    *,
    acting_user: Any,
    cluster: str,
    topic: str,
    group: str,
    partition: int,
    ids: list[str],
    consumer: str,
    reason: str = "",
    origin: Origin | None = None,
) -> list[str]:
    """Claim pending ``ids`` of one partition to ``consumer``; returns the claimed ids."""
    require_action(acting_user, Action.CLAIM, cluster=cluster, topic=topic)
    ids = _clean_ids(ids)
    consumer = (consumer or "").strip()
    if not consumer:
        raise ValueError("name the consumer to claim to")
    if len(ids) > 1:
        reason = require_reason(reason)
    with audited(
        acting_user=acting_user,
        event_type=AuditEventType.PENDING_CLAIM,
        origin=origin,
        cluster=cluster,
        topic=topic,
        letter_ids=ids,
        reason=reason,
        detail={"group": group, "partition": partition, "consumer": consumer},
    ) as audit:
        claimed = writer_admin(cluster).claim(topic, group, partition, ids, consumer)
        audit.set(
            "claimed", counts={"claimed": len(claimed), "not_pending": len(ids) - len(claimed)}
        )
    return list(claimed)


def pending_move_to_dlq(
    *,
    acting_user: Any,
    cluster: str,
    topic: str,
    group: str,
    partition: int,
    ids: list[str],
    reason: str,
    origin: Origin | None = None,
) -> list[str]:
    """Dead-letter pending ``ids`` (DLQ add + ack atomically per entry); reason required."""
    require_action(acting_user, Action.MOVE_TO_DLQ, cluster=cluster, topic=topic)
    ids = _clean_ids(ids)
    reason = require_reason(reason)
    with audited(
        acting_user=acting_user,
        event_type=AuditEventType.PENDING_MOVE_TO_DLQ,
        origin=origin,
        cluster=cluster,
        topic=topic,
        letter_ids=ids,
        reason=reason,
        detail={"group": group, "partition": partition},
    ) as audit:
        moved = writer_admin(cluster).move_to_dlq(
            topic, group, partition, ids, reason=f"operator {audit.intent.actor}: {reason}"[:200]
        )
        audit.set("moved", counts={"moved": len(moved), "not_pending": len(ids) - len(moved)})
    return list(moved)
