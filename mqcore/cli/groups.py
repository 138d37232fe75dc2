"""``mqcore lag``, ``pending``, ``leases``: the state of a topic's consumer groups."""

from __future__ import annotations

import argparse
from typing import Any

from mqcore.cli.common import (
    AddParser,
    Out,
    Parser,
    UsageError,
    add_format,
    config,
    csv_out,
    csv_wanted,
    jsonable,
    table,
)
from mqcore.export_rows import LAG_COLUMNS, PENDING_COLUMNS, lag_rows, pending_row

__all__ = ["add_parsers", "cmd_lag", "cmd_leases", "cmd_pending"]


def add_parsers(add: AddParser, common: Parser) -> None:
    p = add("lag", parents=[common], help="lag per group and partition")
    p.add_argument("topic")
    p.add_argument("--group")
    add_format(p)

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
    add_format(p, every="every matching entry, partition by partition, in bounded XPENDING pages")

    p = add("leases", parents=[common], help="partition owners, time left, epochs")
    p.add_argument("topic")
    p.add_argument("--group")


def cmd_lag(args: argparse.Namespace, out: Out) -> int:
    from mqcore.admin import Admin

    as_csv = csv_wanted(args)
    groups = Admin(config(args)).lag(args.topic, args.group)
    if as_csv:
        csv_out(LAG_COLUMNS, lag_rows(groups))
        return 0
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

    as_csv = csv_wanted(args)
    if args.all:
        return _pending_all(args, out, as_csv)
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

    if as_csv:
        csv_out(PENDING_COLUMNS, (pending_row(e) for e in page.entries))
        return 0
    out.emit(page, human)
    return 0


def _pending_all(args: argparse.Namespace, out: Out, as_csv: bool) -> int:
    """``pending --all``: every matching entry (the console's pending export)."""
    from mqcore.admin import Admin
    from mqcore.admin.export import PendingRows
    from mqcore.keys import validate_name

    if args.offset or args.sort != "idle" or args.order != "desc":
        raise UsageError("--all reads partition by partition: no --offset, --sort or --order")
    admin = Admin(config(args))
    validate_name("group", args.group)
    count = admin.partition_count(args.topic)
    if args.partition is not None and not 0 <= args.partition < count:
        raise UsageError(f"topic {args.topic!r} has partitions 0..{count - 1}")
    scan = PendingRows(
        admin.client,
        admin.keys,
        args.topic,
        args.group,
        [args.partition] if args.partition is not None else list(range(count)),
        admin.groups,
        consumer=args.consumer or None,
        min_idle_ms=args.min_idle_ms,
        min_deliveries=args.min_deliveries,
        max_rows=args.max_rows,
    )
    if as_csv:
        csv_out(PENDING_COLUMNS, (pending_row(e) for e in scan))
    else:
        entries = [jsonable(e) for e in scan]
        data = {
            "entries": entries,
            "scanned": scan.scanned,
            "rows": scan.rows,
            "truncated": scan.truncated,
            "complete": scan.complete,
        }
        out.emit(data, str)
    return 0


def cmd_leases(args: argparse.Namespace, out: Out) -> int:
    from mqcore.admin import Admin

    leases = Admin(config(args)).leases(args.topic, args.group)
    out.emit(leases, lambda d: table(d, ["group", "partition", "owner", "ttl_ms", "epoch"]))
    return 0
