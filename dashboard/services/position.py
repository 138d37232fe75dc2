"""Moving a consumer group's position (skip a backlog, reprocess after a fix): Admin only.

Permission check, a reason, the group name typed as confirmation, then the
audit intent row, the mqcore move (:meth:`mqcore.admin.Admin.set_position`)
and the audit outcome row. The outcome's ``detail`` is read by the incident
timeline: ``{"group", "direction": skip|rewind|mixed|none, "moved": [partition...],
"moves": [{"partition", "from_id", "to_id", "skipped", "redelivered"}]}``, counts
``{"partitions", "skipped", "redelivered"}``. A failed move's row names what moved
and what did not: ``{"error", "group", "moved": [...], "not_moved": [...] | ["all"]}``
(a move is all or none up to 64 partitions; beyond, chunk by chunk).

A group a pipeline moves (its checkpoint records name it) is refused unless
``force``: the pipeline's sink commits the group's position with each batch.
"""

from __future__ import annotations

from typing import Any

from dashboard.clusters import writer_admin
from dashboard.models import AuditEventType
from dashboard.permissions import Action, require_action
from dashboard.selectors.position import parse_partitions, plan_json, position_target
from dashboard.services.audit import (
    ConfirmationError,
    Origin,
    audit_begin,
    audit_complete,
    require_reason,
)
from mqcore.errors import PartialMoveError

__all__ = ["ConfirmationError", "set_group_position"]


def set_group_position(
    *,
    acting_user: Any,
    cluster: str,
    topic: str,
    group: str,
    kind: str,
    value: Any = None,
    partitions: Any = None,
    reason: str,
    confirm: str,
    origin: Origin | None = None,
    force: bool = False,
) -> dict[str, Any]:
    """Move ``group`` on ``partitions`` (all when None) to the target; returns the result plan."""
    require_action(acting_user, Action.SET_POSITION, cluster=cluster, topic=topic)
    target = position_target(kind, value)
    parts = parse_partitions(partitions)
    reason = require_reason(reason)
    if (confirm or "") != group:
        raise ConfirmationError("type the exact group name to confirm the move")
    scope: list[int | str] = [*parts] if parts is not None else ["all"]
    intent = audit_begin(
        acting_user=acting_user,
        event_type=AuditEventType.GROUP_SET_POSITION,
        origin=origin,
        cluster=cluster,
        topic=topic,
        reason=reason,
        detail={
            "group": group,
            "target": target.as_dict(),
            "partitions": scope,
            "force": bool(force),
        },
    )
    try:
        done = writer_admin(cluster).set_position(topic, group, target, parts, force=bool(force))
    except Exception as exc:
        moved, rest = (
            (exc.moved, exc.not_moved) if isinstance(exc, PartialMoveError) else ([], scope)
        )
        detail = {"error": f"{type(exc).__name__}: {exc}", "group": group, "moved": moved}
        audit_complete(intent, outcome="failed", detail={**detail, "not_moved": rest})
        raise
    moves = [
        {
            "partition": m.partition,
            "from_id": m.current_id,
            "to_id": m.target_id,
            "skipped": m.skipped,
            "redelivered": m.redelivered,
        }
        for m in done.moves
    ]
    audit_complete(
        intent,
        outcome="moved",
        counts={
            "partitions": len(done.moves),
            "skipped": done.skipped,
            "redelivered": done.redelivered,
        },
        detail={
            "group": group,
            "direction": done.direction,
            "moved": [m.partition for m in done.moves],
            "moves": moves,
        },
    )
    return plan_json(done)
