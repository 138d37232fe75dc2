"""``mqcore lag``, ``pending``, ``leases``: the state of a topic's consumer groups."""

from __future__ import annotations

import argparse
from typing import Any

from mqcore.cli.common import AddParser, Out, Parser, config, table

__all__ = ["add_parsers", "cmd_lag", "cmd_leases", "cmd_pending"]


def add_parsers(add: AddParser, common: Parser) -> None:
    p = add("lag", parents=[common], help="lag per group and partition")
    p.add_argument("topic")
    p.add_argument("--group")

    p = add("pending", parents=[common], help="pending entries of a group")
    p.add_argument("topic")
    p.add_argument("--group", required=True)
    p.add_argument("--sort", choices=["idle", "count"], default="idle")
    p.add_argument("--order", choices=["desc", "asc"], default="desc")
    p.add_argument("--limit", type=int, default=50)
    p.add_argument("--offset", type=int, default=0)
    p.add_argument("--consumer")
    p.add_argument("--partition", type=int)
    p.add_argument("--min-idle-ms", type=int, default=0)
    p.add_argument("--min-deliveries", type=int, default=0)

    p = add("leases", parents=[common], help="partition owners, time left, epochs")
    p.add_argument("topic")
    p.add_argument("--group")


def cmd_lag(args: argparse.Namespace, out: Out) -> int:
    from mqcore.admin import Admin

    groups = Admin(config(args)).lag(args.topic, args.group)
    data = {"topic": args.topic, "groups": groups}

    def human(d: dict[str, Any]) -> str:
        rows = []
        for g in d["groups"]:
            rows.append({**g, "partition": "all"})
            rows.extend({"group": g["group"], **p} for p in g["partitions"])
        cols = ["group", "partition", "lag", "lag_ms", "pending", "lag_exact", "last_delivered_id"]
        return table(rows, cols) if rows else f"no consumer groups on {d['topic']}"

    out.emit(data, human)
    return 0


def cmd_pending(args: argparse.Namespace, out: Out) -> int:
    from mqcore.admin import Admin

    page = Admin(config(args)).pending(
        args.topic,
        args.group,
        sort=args.sort,
        order=args.order,
        limit=args.limit,
        offset=args.offset,
        consumer=args.consumer,
        partition=args.partition,
        min_idle_ms=args.min_idle_ms,
        min_deliveries=args.min_deliveries,
    )

    def human(d: dict[str, Any]) -> str:
        cols = ["partition", "id", "consumer", "idle_ms", "deliveries"]
        note = f"scanned {d['scanned']}, matching {d['total']}"
        note += "" if d["complete"] else " (scan stopped at its bound)"
        return table(d["entries"], cols) + "\n" + note

    out.emit(page, human)
    return 0


def cmd_leases(args: argparse.Namespace, out: Out) -> int:
    from mqcore.admin import Admin

    leases = Admin(config(args)).leases(args.topic, args.group)
    out.emit(leases, lambda d: table(d, ["group", "partition", "owner", "ttl_ms", "epoch"]))
    return 0
