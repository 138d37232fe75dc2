"""Reading series for charts: the finest tier that covers the window, up to the present."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.conf import settings

from dashboard.store.batches import BULK_PER_EXECUTE, run_batched
from dashboard.store.keys import ConsoleKeys
from dashboard.store.points import decode_points, point_struct, tier_for, tiers
from mqcore.wire import Command, first_error

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
    interval = max(1, int(settings.COLLECT_INTERVAL_S))
    tail = 0
    if tier.bucket_s:
        tail = (2 * tier.bucket_s // interval + 2) * point.size
    # only the window's bytes (twice the points its cadence gives, for passes that came
    # early); a series whose read came back full and still starts inside the window is
    # read whole below. A 1-hour sparkline then reads 1 hour, not the day of raw points.
    window = (2 * max(0, now_ms - since_ms) // 1000 // (tier.bucket_s or interval) + 4) * point.size
    cmds: list[Command] = []
    for entity in entities:
        cmds.append(("GETRANGE", keys.series(cluster, tier.name, metric, entity), -window, -1))
        if tail:
            cmds.append(("GETRANGE", keys.series(cluster, "raw", metric, entity), -tail, -1))
    replies = _run(client, cmds)
    step = 2 if tail else 1
    short = [
        i
        for i in range(0, len(replies), step)
        if len(replies[i] or b"") >= window
        and (pts := decode_points(replies[i][: point.size], point))
        and pts[0][0] > since_ms
    ]
    if short:
        whole = _run(client, [("GET", cmds[i][1]) for i in short])
        for i, data in zip(short, whole, strict=True):
            replies[i] = data
    out = []
    for i in range(0, len(replies), step):
        pts = decode_points(replies[i], point)
        if tail:
            after = pts[-1][0] + tier.bucket_s * 1000 if pts else -1
            pts += [(t, v) for t, v in decode_points(replies[i + 1], point) if t >= after]
        out.append([(t, v) for t, v in pts if t >= since_ms])
    return out


def _run(client: Any, cmds: list[Command]) -> list[Any]:
    replies = run_batched(client, cmds, per_execute=BULK_PER_EXECUTE, translate=False)
    error = first_error(replies)
    if error is not None:
        raise error
    return replies
