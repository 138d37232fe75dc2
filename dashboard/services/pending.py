"""Operator actions on pending entries: claim to a consumer, move to the DLQ (audited)."""

from __future__ import annotations

from dashboard.clusters import writer_admin
from dashboard.models import AuditEventType
from dashboard.permissions import Action
from dashboard.services.audit import Actor, audited, require_reason

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
    actor: Actor, *, group: str, partition: int, ids: list[str], consumer: str, reason: str = ""
) -> list[str]:
    """Claim pending ``ids`` of one partition to ``consumer``; returns the claimed ids."""
    actor.require(Action.CLAIM)
    ids = _clean_ids(ids)
    consumer = (consumer or "").strip()
    if not consumer:
        raise ValueError("name the consumer to claim to")
    if len(ids) > 1:
        reason = require_reason(reason)
    detail = {"group": group, "partition": partition, "consumer": consumer}
    with audited(
        actor, AuditEventType.PENDING_CLAIM, letter_ids=ids, reason=reason, detail=detail
    ) as audit:
        admin = writer_admin(actor.cluster)
        claimed = admin.claim(actor.topic, group, partition, ids, consumer)
        audit.set(
            "claimed", counts={"claimed": len(claimed), "not_pending": len(ids) - len(claimed)}
        )
    return list(claimed)


def pending_move_to_dlq(
    actor: Actor, *, group: str, partition: int, ids: list[str], reason: str
) -> list[str]:
    """Dead-letter pending ``ids`` (DLQ add + ack atomically per entry); reason required."""
    actor.require(Action.MOVE_TO_DLQ)
    ids = _clean_ids(ids)
    reason = require_reason(reason)
    detail = {"group": group, "partition": partition}
    with audited(
        actor, AuditEventType.PENDING_MOVE_TO_DLQ, letter_ids=ids, reason=reason, detail=detail
    ) as audit:
        why = f"operator {audit.intent.actor}: {reason}"[:200]
        moved = writer_admin(actor.cluster).move_to_dlq(
            actor.topic, group, partition, ids, reason=why
        )
        audit.set("moved", counts={"moved": len(moved), "not_pending": len(ids) - len(moved)})
    return list(moved)
