"""Reading series for charts: the finest tier that covers the window, up to the present."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.conf import settings

from dashboard.store.batches import BULK_PER_EXECUTE, Command, first_error, run_batched
from dashboard.store.points import decode_points, point_struct, tier_for, tiers
from mqcore.keys import ConsoleKeys

__all__ = ["read_series"]


def read_series(
    client: Any,
    keys: ConsoleKeys,
    cluster: str,
    metric: str,
    entities: Sequence[str],
    since_ms: int,
    now_ms: int,
) -> list[list[tuple[int, float]]]:
    """Points since ``since_ms`` of each entity's series, from the finest tier covering it.

    A coarse tier only has the buckets that closed; the raw points after its
    last bucket (the open one) are appended, so charts reach the present.
    Redis errors are raised as redis-py raises them.
    """
    tier = tier_for(since_ms, now_ms, tiers())
    point = point_struct(metric)
    tail = 0
    if tier.bucket_s:
        interval = max(1, int(settings.COLLECT_INTERVAL_S))
        tail = (2 * tier.bucket_s // interval + 2) * point.size
    cmds: list[Command] = []
    for entity in entities:
        cmds.append(("GET", keys.series(cluster, tier.name, metric, entity)))
        if tail:
            cmds.append(("GETRANGE", keys.series(cluster, "raw", metric, entity), -tail, -1))
    replies = run_batched(client, cmds, per_execute=BULK_PER_EXECUTE, translate=False)
    error = first_error(replies)
    if error is not None:
        raise error
    out = []
    step = 2 if tail else 1
    for i in range(0, len(replies), step):
        pts = decode_points(replies[i], point)
        if tail:
            after = pts[-1][0] + tier.bucket_s * 1000 if pts else -1
            pts += [(t, v) for t, v in decode_points(replies[i + 1], point) if t >= after]
        out.append([(t, v) for t, v in pts if t >= since_ms])
    return out
