"""The dry run of a group position move (a live read of the MQ Redis; nothing is written)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from dashboard import clusters
from dashboard.permissions import Action, require_action
from dashboard.selectors.pages.snapshot import topic_visible_require
from mqcore.admin import PositionPlan, PositionTarget

__all__ = ["parse_partitions", "plan_json", "position_plan_get", "position_target"]

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


def plan_json(plan: PositionPlan) -> dict[str, Any]:
    """A plan or a result as plain JSON data (the API's and the templates' shape)."""
    return asdict(plan)


def position_plan_get(
    *,
    user: Any,
    cluster: str,
    topic: str,
    group: str,
    kind: str,
    value: Any = None,
    partitions: Any = None,
) -> dict[str, Any]:
    """Dry run of moving ``group`` to the target, for a user allowed to move positions."""
    require_action(user, Action.SET_POSITION, cluster=cluster, topic=topic)
    topic_visible_require(user, cluster, topic)
    target = position_target(kind, value)
    plan = clusters.admin(cluster).plan_position(topic, group, target, parse_partitions(partitions))
    return plan_json(plan)
