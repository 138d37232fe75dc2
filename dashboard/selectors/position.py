"""The dry run of a group position move (a live read of the MQ Redis; nothing is written)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from dashboard import clusters
from dashboard.permissions import Action, require_action
from dashboard.selectors.pages.snapshot import topic_visible_require
from mqcore.admin import PositionPlan, PositionTarget

__all__ = ["GroupMove", "parse_partitions", "plan_json", "position_plan_get", "position_target"]

MAX_PARTITIONS = 4096


def position_target(kind: str, value: Any = None) -> PositionTarget:
    """The checked target (ValueError, a 400, when malformed)."""
    if isinstance(value, str):
        value = value.strip() or None
    if kind in ("time", "id") and value is None:
        raise ValueError(f"a {kind} target needs a value")
    return PositionTarget.of(kind, value)


def parse_partitions(raw: Any) -> list[int] | None:
    """None for all partitions (``"all"``, empty), else the listed partition numbers."""
    if raw is None or raw == "all" or raw == [] or raw == "":
        return None
    items = raw if isinstance(raw, list) else str(raw).replace(",", " ").split()
    if "all" in items:
        return None
    out: list[int] = []
    for item in items[:MAX_PARTITIONS]:
        if isinstance(item, bool) or not (
            isinstance(item, int) or (isinstance(item, str) and item.strip().isdigit())
        ):
            raise ValueError(f"partitions: numbers or all, not {str(item)[:20]!r}")
        out.append(int(item))
    return out


@dataclass(frozen=True, slots=True)
class GroupMove:
    """A move of ``group``'s position: its checked target, on ``partitions`` (None: all)."""

    group: str
    target: PositionTarget
    partitions: list[int] | None = None

    @classmethod
    def of(cls, group: str, kind: str, value: Any = None, partitions: Any = None) -> GroupMove:
        """The move a request names (ValueError, a 400, when malformed)."""
        return cls(group, position_target(kind, value), parse_partitions(partitions))

    @property
    def scope(self) -> list[int | str]:
        """The partitions as the audit row names them (``["all"]``)."""
        return [*self.partitions] if self.partitions is not None else ["all"]


def plan_json(plan: PositionPlan) -> dict[str, Any]:
    """A plan or a result as plain JSON data (the API's and the templates' shape)."""
    return asdict(plan)


def position_plan_get(*, user: Any, cluster: str, topic: str, move: GroupMove) -> dict[str, Any]:
    """Dry run of ``move``, for a user allowed to move positions."""
    require_action(user, Action.SET_POSITION, cluster=cluster, topic=topic)
    topic_visible_require(user, cluster, topic)
    admin = clusters.admin(cluster)
    return plan_json(admin.plan_position(topic, move.group, move.target, move.partitions))
