"""The snapshot's dict shapes shared with :class:`mqcore.admin.Admin`, and their dataclasses."""

from __future__ import annotations

import json
from operator import itemgetter
from typing import Any

from mqcore import lag as lagmath
from mqcore.codec import decode_text
from mqcore.models import (
    ClusterSnapshot,
    ConsumerInfo,
    GroupLag,
    LagExactness,
    LeaseInfo,
    PartitionLag,
    RetryBacklog,
    TopicSnapshot,
)

__all__ = ["consumer_dicts", "group_dict", "lease_dict", "snapshot_from_dict"]

_BY_PARTITION = itemgetter("partition")


def group_dict(group: str, partitions: list[dict[str, Any]]) -> dict[str, Any]:
    """A group's snapshot form: :func:`mqcore.lag.group_totals` and its partitions."""
    return {
        "group": group,
        **lagmath.group_totals(partitions),
        "partitions": sorted(partitions, key=_BY_PARTITION),
    }


def lease_dict(group: str, partition: int, owner: Any, ttl: Any, epoch: Any) -> dict[str, Any]:
    alive = owner is not None and isinstance(ttl, int) and ttl != -2
    try:
        epoch_n = int(epoch)
    except (TypeError, ValueError):
        epoch_n = 0
    return {
        "group": group,
        "partition": partition,
        "owner": decode_text(owner) if alive else None,
        "ttl_ms": int(ttl) if alive and ttl >= 0 else None,
        "epoch": epoch_n,
    }


def consumer_dicts(
    group: str, stats: dict[str, dict[str, int]], beats: dict[Any, Any], now: int
) -> list[dict[str, Any]]:
    """Consumers of a group: XINFO CONSUMERS stats joined with mqcore heartbeats, by name."""
    hb: dict[str, dict[str, Any]] = {}
    for name, raw in beats.items():
        try:
            data = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            continue
        if isinstance(data, dict):
            hb[decode_text(name)] = data
    out = []
    # once per consumer of every group of a pass: no throwaway defaults
    for name in sorted(stats.keys() | hb.keys()) if hb else sorted(stats):
        s = stats.get(name)
        pending, s_idle = (0, -1) if s is None else (s["pending"], s["idle"])
        beat = hb.get(name)
        seen_age = cap = None
        held_n: list[int] = []
        if beat is not None:
            last_seen = beat.get("last_seen_ms")
            if isinstance(last_seen, (int, float)):  # a tuple checks faster than a union
                seen_age = max(0, now - int(last_seen))
            held = beat.get("partitions") or []
            held_n = sorted([int(p) for p in held if isinstance(p, int)])
            cap = beat.get("max_partitions")
        out.append(
            {
                "group": group,
                "name": name,
                "pending": pending,
                "idle_ms": s_idle if s_idle >= 0 else (seen_age if seen_age is not None else 0),
                "last_seen_ms": seen_age,
                "partitions_held": held_n,
                "max_partitions": int(cap) if isinstance(cap, int) else None,
            }
        )
    return out


def snapshot_from_dict(data: dict[str, Any]) -> ClusterSnapshot:
    """The dataclasses of a snapshot dict made by :func:`take_snapshot_dict`."""
    topics = []
    for t in data["topics"]:
        groups = [
            GroupLag(
                group=g["group"],
                lag=g["lag"],
                lag_ms=g["lag_ms"],
                pending=g["pending"],
                lag_exact=g["lag_exact"],
                partitions=[
                    PartitionLag(**{**p, "exactness": LagExactness(p["exactness"])})
                    for p in g["partitions"]
                ],
            )
            for g in t["groups"]
        ]
        topics.append(
            TopicSnapshot(
                topic=t["topic"],
                partitions=t["partitions"],
                length=t["length"],
                dlq_length=t["dlq_length"],
                retry=RetryBacklog(**t["retry"]),
                groups=groups,
                leases=[LeaseInfo(**x) for x in t["leases"]],
                consumers=[ConsumerInfo(**c) for c in t["consumers"]],
                partition_lengths=list(t["partition_lengths"]),
                partition_last_ids=list(t["partition_last_ids"]),
                error=t["error"],
            )
        )
    return ClusterSnapshot(
        taken_at_ms=data["taken_at_ms"],
        topics=topics,
        redis_run_id=data["redis_run_id"],
        elapsed_ms=data["elapsed_ms"],
        commands=data["commands"],
        pipelines=data["pipelines"],
    )
