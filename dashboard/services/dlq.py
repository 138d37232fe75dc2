"""Dead-letter writes on single letters: replay one, delete, purge, export.

Bulk replay jobs are in :mod:`dashboard.services.bulk_replay`, their runner in
:mod:`dashboard.services.replay_runner`.

Every function follows the same order (ARCHITECTURE.md): permission check ->
input checked -> ``with audited(...)``: intent row (outcome "unknown"), mqcore call
(atomic Lua), outcome row. Replays are idempotent in Redis (replay records), so a double
click, a retried request or a resumed job never replays a letter twice unless
an admin forces it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from dashboard.clusters import dead_letters, writer_dead_letters
from dashboard.masking import MASK, mask_headers
from dashboard.models import AuditEventType
from dashboard.permissions import Action, payload_visible
from dashboard.services.audit import (
    Actor,
    ConfirmationError,
    audited,
    require_confirmation,
    require_reason,
)
from mqcore.codec import validate_id
from mqcore.errors import UnknownMessageError, UnknownPartitionError
from mqcore.models import ReplayResult

__all__ = [
    "ConfirmationError",
    "ReplayTarget",
    "TargetError",
    "dlq_delete",
    "dlq_export",
    "dlq_purge",
    "dlq_replay",
    "export_ids",
]


class TargetError(ValueError):
    """A replay target (topic or partition) the cluster does not have; nothing was written."""


@dataclass(frozen=True, slots=True)
class ReplayTarget:
    """Where a replay goes: each letter to its own partition, unless an Admin names another
    ``topic`` or ``partition``; ``force`` replays a letter already replayed."""

    force: bool = False
    topic: str | None = None
    partition: int | None = None

    @property
    def named(self) -> bool:
        """Whether it names another topic or partition."""
        return bool(self.topic) or self.partition is not None

    def require(self, actor: Actor) -> None:
        """PermissionDenied unless ``actor`` may replay so: replay, force, a target (and
        replay on the target topic)."""
        actor.require(Action.REPLAY)
        if self.force:
            actor.require(Action.FORCE)
        if self.named:
            actor.require(Action.REPLAY_TARGET)
            if self.topic:
                actor.require(Action.REPLAY, topic=self.topic)

    def event(self) -> AuditEventType:
        if self.named:
            return AuditEventType.DLQ_REPLAY_TARGET
        return AuditEventType.DLQ_REPLAY_FORCED if self.force else AuditEventType.DLQ_REPLAY


AS_DEAD_LETTERED = ReplayTarget()  # each letter to its own partition, once


def dlq_replay(
    actor: Actor, *, dlq_id: str, reason: str = "", target: ReplayTarget = AS_DEAD_LETTERED
) -> ReplayResult:
    """Replay one letter (to its original partition unless an admin names a target).

    Already replayed letters are a no-op (``replayed=False``, reason
    "already-replayed") unless ``force``; the audit outcome is the result's reason.
    """
    target.require(actor)
    if target.force or target.named:
        reason = require_reason(reason)
    to_topic = target.topic or None
    detail = {"force": target.force, "target_topic": to_topic, "target_partition": target.partition}
    with audited(actor, target.event(), letter_ids=[dlq_id], reason=reason, detail=detail) as audit:
        try:
            result = writer_dead_letters(actor.cluster).replay(
                actor.topic,
                dlq_id,
                by=actor.user.get_username(),
                force=target.force,
                target_topic=to_topic,
                target_partition=target.partition,
            )
        except UnknownPartitionError as exc:  # a target in the request, not a page: bad input
            raise TargetError(str(exc)) from exc
        audit.set(
            result.reason,
            counts={"replayed": int(result.replayed)},
            detail={"new_id": result.new_id, "topic": result.topic, "partition": result.partition},
        )
    return result


def dlq_delete(actor: Actor, *, dlq_id: str, reason: str) -> bool:
    """Delete one letter (admin). Returns False when it was already gone."""
    actor.require(Action.DELETE)
    reason = require_reason(reason)
    with audited(actor, AuditEventType.DLQ_DELETE, letter_ids=[dlq_id], reason=reason) as audit:
        deleted = writer_dead_letters(actor.cluster).delete(actor.topic, dlq_id)
        audit.set("deleted" if deleted else "missing", counts={"deleted": int(deleted)})
    return bool(deleted)


def dlq_purge(actor: Actor, *, confirm: str, reason: str) -> int:
    """Purge a topic's whole DLQ (admin); ``confirm`` must be the topic name typed again."""
    actor.require(Action.PURGE)
    reason = require_reason(reason)
    require_confirmation(confirm, actor.topic, "type the topic name exactly to confirm the purge")
    with audited(actor, AuditEventType.DLQ_PURGE, reason=reason) as audit:
        removed = writer_dead_letters(actor.cluster).purge(actor.topic)
        audit.set("purged", counts={"deleted": int(removed)})
    return int(removed)


def export_ids(ids: list[str]) -> list[str]:
    """The letter ids of an export request, validated (full match) and bounded, or ValueError.

    Runs before the audit intent row: the row never holds ids that were not checked.
    """
    unique = list(dict.fromkeys(i for i in ids if i))
    if not unique:
        raise ValueError("select at least one letter to export")
    if len(unique) > MAX_EXPORT:
        raise ValueError(f"export at most {MAX_EXPORT} letters at a time")
    for dlq_id in unique:
        if len(dlq_id) > MAX_ID_CHARS:
            raise ValueError(f"invalid letter id: longer than {MAX_ID_CHARS} characters")
        validate_id(dlq_id)
    return unique


def dlq_export(actor: Actor, *, ids: list[str]) -> list[dict[str, Any]]:
    """The selected letters as JSON-ready dicts (payloads masked for whom they must be)."""
    actor.require(Action.VIEW)
    cluster, topic = actor.cluster, actor.topic
    ids = export_ids(ids)
    visible = payload_visible(actor.user, cluster, topic)
    out: list[dict[str, Any]] = []
    detail = {"masked": not visible}
    with audited(actor, AuditEventType.DLQ_EXPORT, letter_ids=ids, detail=detail) as audit:
        dlq = dead_letters(cluster)
        budget = dlq.config.decode_budget()  # the export is one page: one budget
        for dlq_id in ids:
            try:
                letter = dlq.get(topic, dlq_id, decode=budget)
            except UnknownMessageError:
                continue
            data = asdict(letter)
            data.pop("payload_bytes", None)
            if letter.payload_bytes is not None:
                data["payload_hex"] = letter.payload_bytes.hex()
            data["headers"] = mask_headers(letter.headers, visible=visible)
            if not visible:
                data["payload"] = MASK
                data.pop("payload_hex", None)
            out.append(data)
        audit.set("exported", counts={"exported": len(out)})
    return out


MAX_EXPORT = 1000
MAX_ID_CHARS = 41  # two 20-digit numbers and the dash
