"""Moving a consumer group's position (skip a backlog, reprocess after a fix): Admin only.

Permission check, a reason, the group name typed as confirmation, then the
audit intent row, the mqcore move (:meth:`mqcore.admin.Admin.set_position`)
and the audit outcome row. The outcome's ``detail`` is read by the incident
timeline: ``{"group", "direction": skip|rewind|mixed|none, "moves": [{"partition",
"from_id", "to_id", "skipped", "redelivered"}]}``, counts ``{"partitions",
"skipped", "redelivered"}``.
"""

from __future__ import annotations

from typing import Any

from dashboard.clusters import admin
from dashboard.models import AuditEventType
from dashboard.permissions import Action, require_action
from dashboard.selectors.position import parse_partitions, plan_json, position_target
from dashboard.services.audit import (
    ConfirmationError,
    Origin,
    audit_begin,
    audit_complete,
    audit_failure,
    require_reason,
)

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
        },
    )
    with audit_failure(intent):
        done = admin(cluster).set_position(topic, group, target, parts)
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
        detail={"group": group, "direction": done.direction, "moves": moves},
    )
    return plan_json(done)
