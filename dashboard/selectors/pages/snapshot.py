"""The collectors' latest snapshot of a cluster, as the read pages consume it.

Snapshot values come from the console store and may be missing or malformed;
the helpers here read them tolerantly (None for unknown numbers, UNKNOWN for an
unknown status) instead of failing the page.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from dashboard.clusters import cluster_config, console_store
from dashboard.permissions import topic_visible
from dashboard.selectors.pages.params import NotFoundError
from dashboard.status import status_parse
from mqcore.clock import now_ms

__all__ = [
    "now_ms",
    "num",
    "pipeline_mark",
    "snapshot_age_ms",
    "snapshot_get",
    "snapshot_topic_get",
    "status_name",
    "to_int",
    "topic_visible_require",
]


def snapshot_get(cluster: str) -> dict[str, Any] | None:
    """The latest stored snapshot of ``cluster``; None before the first pass.

    Raises UnknownClusterError (404) for a cluster that is not configured.
    """
    cluster_config(cluster)
    snap = console_store().snapshot_get(cluster)
    return snap if isinstance(snap, dict) else None


def snapshot_age_ms(snapshot: Mapping[str, Any] | None) -> int | None:
    """How long ago ``snapshot`` was taken; None without a snapshot or its time."""
    if not snapshot:
        return None
    taken = snapshot.get("taken_at_ms")
    return max(0, now_ms() - int(taken)) if isinstance(taken, int | float) else None


def snapshot_topic_get(snap: Mapping[str, Any] | None, topic: str) -> dict[str, Any] | None:
    """A copy of ``topic``'s entry in ``snap``; None when the snapshot lacks it."""
    for t in (snap or {}).get("topics") or []:
        if isinstance(t, Mapping) and t.get("topic") == topic:
            return dict(t)
    return None


def topic_visible_require(user: Any, cluster: str, topic: str) -> None:
    """NotFoundError when ``user`` may not see ``topic``: exactly like a missing topic."""
    if not topic_visible(user, cluster, topic):
        raise NotFoundError(f"unknown topic {topic!r}")


def num(value: Any) -> float | None:
    """``value`` as a finite float; None for None, booleans, text and NaN/infinity."""
    if value is None or isinstance(value, bool):
        return None
    try:
        n = float(value)
    except (TypeError, ValueError):
        return None
    return n if math.isfinite(n) else None


def to_int(value: Any, default: int = 0) -> int:
    """``value`` as an int (see :func:`num`), ``default`` when it is not a number."""
    n = num(value)
    return default if n is None else int(n)


def status_name(value: Any) -> str:
    """The status name stored in a snapshot field; UNKNOWN when missing or not a status."""
    return status_parse(value).value


def pipeline_mark(g: Mapping[str, Any]) -> dict[str, Any] | None:
    """The collector's pipeline mark of a group (see dashboard.collectors.pipelines), or None."""
    mark = g.get("pipeline")
    if not isinstance(mark, Mapping) or not mark.get("name"):
        return None

    def ms(value: Any) -> int | None:
        n = num(value)
        return None if n is None else int(n)

    return {
        "name": str(mark.get("name")),
        "last_checkpoint_ms": ms(mark.get("last_checkpoint_ms")),
        "checkpoint_age_ms": ms(mark.get("checkpoint_age_ms")),
        "failed_checkpoints": to_int(mark.get("failed_checkpoints")),
        "health": str(mark.get("health") or "no_checkpoint"),
        "health_reason": str(mark.get("health_reason") or ""),
    }
