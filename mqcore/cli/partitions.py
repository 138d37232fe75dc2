"""``mqcore topic partitions TOPIC``: length, last id and memory of each partition and
their skew (the busiest partition against the mean, as the topic page's partition
panel), from live bounded reads (:func:`mqcore.admin.partitions.partition_rows`);
``--hot-keys P`` adds the most frequent keys of partition P's newest entries
(:func:`mqcore.admin.partitions.hot_keys`, a bounded sample)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from mqcore.cli.common import Out, UsageError, config, human_bytes, plain, table

__all__ = ["cmd_partitions"]

COLUMNS = ["partition", "length", "last_id", "memory", "hot"]
HOT_COLUMNS = ["key", "count", "share"]


def cmd_partitions(args: argparse.Namespace, out: Out) -> int:
    from mqcore.admin import Admin
    from mqcore.admin.partitions import HOT_KEYS_DEFAULT, HOT_KEYS_MAX, hot_keys, partition_rows
    from mqcore.admin.probes import MEMORY_SAMPLES, MEMORY_SAMPLES_MAX

    samples = MEMORY_SAMPLES if args.samples is None else args.samples
    if not 1 <= samples <= MEMORY_SAMPLES_MAX:
        raise UsageError(f"--samples must be 1..{MEMORY_SAMPLES_MAX}")
    count = HOT_KEYS_DEFAULT if args.count is None else args.count
    if not 1 <= count <= HOT_KEYS_MAX:
        raise UsageError(f"--count must be 1..{HOT_KEYS_MAX}")
    if args.count is not None and args.hot_keys is None:
        raise UsageError("--count is the size of the --hot-keys sample: add --hot-keys P")
    admin = Admin(config(args))
    partitions = admin.partition_count(args.name)
    if args.hot_keys is not None and not 0 <= args.hot_keys < partitions:
        raise UsageError(
            f"--hot-keys: topic {args.name!r} has partitions 0..{partitions - 1}, "
            f"not {args.hot_keys}"
        )
    data = partition_rows(admin.client, admin.keys, args.name, partitions, samples=samples)
    if args.hot_keys is not None:
        data["hot_keys"] = hot_keys(admin.client, admin.keys, args.name, args.hot_keys, count=count)
    out.emit(data, _human)
    return 0


def _skew_line(name: str, s: dict[str, Any] | None, show: Callable[[Any], str]) -> str:
    if s is None:
        return f"{name} skew: fewer than two partitions known"
    if s["ratio"] is None:
        return f"{name} skew: all partitions empty"
    return (
        f"{name} skew: {s['level']} (max {show(s['max'])} on partition {s['partition']} "
        f"vs mean {show(s['mean'])}: {s['ratio']:.2f}x)"
    )


def _human(d: dict[str, Any]) -> str:
    rows = [
        {
            **r,
            "memory": human_bytes(r["memory_bytes"]),
            "hot": ",".join(n for n in ("length", "memory_bytes") if r.get(f"hot_{n}")) or None,
        }
        for r in d["partitions"]
    ]
    lines = [f"topic {plain(d['topic'])}: {len(rows)} partitions", table(rows, COLUMNS)]
    lines.append(f"total {d['length']} entries, {human_bytes(d['memory_bytes'])}")
    lines.append(_skew_line("length", d["skew"]["length"], lambda v: f"{v:g}"))
    lines.append(_skew_line("memory", d["skew"]["memory_bytes"], human_bytes))
    hot = d.get("hot_keys")
    if hot is not None:
        lines.append(
            f"hot keys of partition {hot['partition']}: {hot['sampled']} newest entries "
            f"sampled, {hot['distinct']} distinct keys, {hot['keyless']} without a key"
            + (" (stopped at the byte bound)" if hot["bytes_bound"] else "")
        )
        keys = [{**k, "share": f"{k['share']:.0%}"} for k in hot["keys"]]
        lines.append(table(keys, HOT_COLUMNS) if keys else "no keys in the sample")
    return "\n".join(lines)
