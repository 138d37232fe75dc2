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

from dataclasses import asdict
from typing import Any

from dashboard.clusters import dead_letters, writer_dead_letters
from dashboard.masking import MASK, mask_headers
from dashboard.models import AuditEventType
from dashboard.permissions import Action, payload_visible, require_action
from dashboard.services.audit import (
    ConfirmationError,
    Origin,
    audited,
    require_confirmation,
    require_reason,
)
from mqcore.codec import validate_id
from mqcore.errors import UnknownMessageError, UnknownPartitionError
from mqcore.models import ReplayResult

__all__ = [
    "ConfirmationError",
    "TargetError",
    "dlq_delete",
    "dlq_export",
    "dlq_purge",
    "dlq_replay",
    "export_ids",
    "require_replay",
]


class TargetError(ValueError):
    """A replay target (topic or partition) the cluster does not have; nothing was written."""


def _replay_event(force: bool, target: bool) -> AuditEventType:
    if target:
        return AuditEventType.DLQ_REPLAY_TARGET
    return AuditEventType.DLQ_REPLAY_FORCED if force else AuditEventType.DLQ_REPLAY


def require_replay(
    acting_user: Any,
    cluster: str,
    topic: str,
    *,
    force: bool,
    target_topic: str | None,
    target_partition: int | None,
) -> None:
    require_action(acting_user, Action.REPLAY, cluster=cluster, topic=topic)
    if force:
        require_action(acting_user, Action.FORCE, cluster=cluster, topic=topic)
    if target_topic or target_partition is not None:
        require_action(acting_user, Action.REPLAY_TARGET, cluster=cluster, topic=topic)
        if target_topic:
            require_action(acting_user, Action.REPLAY, cluster=cluster, topic=target_topic)


def dlq_replay(
    *,
    acting_user: Any,
    cluster: str,
    topic: str,
    dlq_id: str,
    reason: str = "",
    force: bool = False,
    target_topic: str | None = None,
    target_partition: int | None = None,
    origin: Origin | None = None,
) -> ReplayResult:
    """Replay one letter (to its original partition unless an admin names a target).

    Already replayed letters are a no-op (``replayed=False``, reason
    "already-replayed") unless ``force``; the audit outcome is the result's reason.
    """
    require_replay(
        acting_user,
        cluster,
        topic,
        force=force,
        target_topic=target_topic,
        target_partition=target_partition,
    )
    target = bool(target_topic) or target_partition is not None
    if force or target:
        reason = require_reason(reason)
    with audited(
        acting_user=acting_user,
        event_type=_replay_event(force, target),
        origin=origin,
        cluster=cluster,
        topic=topic,
        letter_ids=[dlq_id],
        reason=reason,
        detail={"force": force, "target_topic": target_topic, "target_partition": target_partition},
    ) as audit:
        try:
            result = writer_dead_letters(cluster).replay(
                topic,
                dlq_id,
                by=acting_user.get_username(),
                force=force,
                target_topic=target_topic or None,
                target_partition=target_partition,
            )
        except UnknownPartitionError as exc:  # a target in the request, not a page: bad input
            raise TargetError(str(exc)) from exc
        audit.set(
            result.reason,
            counts={"replayed": int(result.replayed)},
            detail={"new_id": result.new_id, "topic": result.topic, "partition": result.partition},
        )
    return result


def dlq_delete(
    *,
    acting_user: Any,
    cluster: str,
    topic: str,
    dlq_id: str,
    reason: str,
    origin: Origin | None = None,
) -> bool:
    """Delete one letter (admin). Returns False when it was already gone."""
    require_action(acting_user, Action.DELETE, cluster=cluster, topic=topic)
    reason = require_reason(reason)
    with audited(
        acting_user=acting_user,
        event_type=AuditEventType.DLQ_DELETE,
        origin=origin,
        cluster=cluster,
        topic=topic,
        letter_ids=[dlq_id],
        reason=reason,
    ) as audit:
        deleted = writer_dead_letters(cluster).delete(topic, dlq_id)
        audit.set("deleted" if deleted else "missing", counts={"deleted": int(deleted)})
    return bool(deleted)


def dlq_purge(
    *,
    acting_user: Any,
    cluster: str,
    topic: str,
    confirm: str,
    reason: str,
    origin: Origin | None = None,
) -> int:
    """Purge a topic's whole DLQ (admin); ``confirm`` must be the topic name typed again."""
    require_action(acting_user, Action.PURGE, cluster=cluster, topic=topic)
    reason = require_reason(reason)
    require_confirmation(confirm, topic, "type the topic name exactly to confirm the purge")
    with audited(
        acting_user=acting_user,
        event_type=AuditEventType.DLQ_PURGE,
        origin=origin,
        cluster=cluster,
        topic=topic,
        reason=reason,
    ) as audit:
        removed = writer_dead_letters(cluster).purge(topic)
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


def dlq_export(
    *, acting_user: Any, cluster: str, topic: str, ids: list[str], origin: Origin | None = None
) -> list[dict[str, Any]]:
    """The selected letters as JSON-ready dicts (payloads masked for whom they must be)."""
    require_action(acting_user, Action.VIEW, cluster=cluster, topic=topic)
    ids = export_ids(ids)
    visible = payload_visible(acting_user, cluster, topic)
    out: list[dict[str, Any]] = []
    with audited(
        acting_user=acting_user,
        event_type=AuditEventType.DLQ_EXPORT,
        origin=origin,
        cluster=cluster,
        topic=topic,
        letter_ids=ids,
        detail={"masked": not visible},
    ) as audit:
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
