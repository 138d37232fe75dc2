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

from functools import partial
from typing import Any

from dashboard.clusters import writer_admin
from dashboard.models import AuditEventType
from dashboard.permissions import Action
from dashboard.selectors.position import GroupMove, plan_json
from dashboard.services.audit import (
    Actor,
    Audited,
    ConfirmationError,
    audited,
    require_confirmation,
    require_reason,
)
from mqcore.admin import PositionPlan
from mqcore.errors import PartialMoveError

__all__ = ["ConfirmationError", "set_group_position"]


def set_group_position(
    actor: Actor, move: GroupMove, *, reason: str, confirm: str, force: bool = False
) -> dict[str, Any]:
    """Make ``move`` on the actor's topic; returns the result plan."""
    actor.require(Action.SET_POSITION)
    group, target = move.group, move.target
    reason = require_reason(reason)
    require_confirmation(confirm, group, "type the exact group name to confirm the move")
    detail = {"group": group, "target": target.as_dict(), "partitions": move.scope}
    with audited(
        actor,
        AuditEventType.GROUP_SET_POSITION,
        reason=reason,
        detail=detail | {"force": bool(force)},
        failure_detail=partial(_not_moved, group, move.scope),
    ) as audit:
        admin = writer_admin(actor.cluster)
        done = admin.set_position(actor.topic, group, target, move.partitions, force=bool(force))
        _moved(audit, group, done)
    return plan_json(done)


def _not_moved(group: str, scope: list[int | str], exc: Exception) -> dict[str, Any]:
    """A failed move's detail: what moved before the failure and what did not."""
    if isinstance(exc, PartialMoveError):
        return {"group": group, "moved": exc.moved, "not_moved": exc.not_moved}
    return {"group": group, "moved": [], "not_moved": scope}


def _moved(audit: Audited, group: str, done: PositionPlan) -> None:
    counts = {
        "partitions": len(done.moves),
        "skipped": done.skipped,
        "redelivered": done.redelivered,
    }
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
    moved = [m.partition for m in done.moves]
    detail = {"group": group, "direction": done.direction, "moved": moved, "moves": moves}
    audit.set("moved", counts=counts, detail=detail)
