"""``mqcore group set-position``: move a consumer group's position (dry run, confirm, move)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from mqcore.cli.common import (
    AddParser,
    Out,
    Parser,
    UsageError,
    add_group,
    add_who_why,
    config,
    jsonable,
    outside_check,
    outside_record,
    table,
)

__all__ = ["add_parsers", "cmd_group"]

COLUMNS = [
    "partition",
    "current_id",
    "lag_before",
    "target_id",
    "target_entries_read",
    "lag_after",
    "skipped",
    "redelivered",
    "pending",
]


def add_parsers(add: AddParser, common: Parser) -> None:
    gsub = add_group(add, common, "group", help="consumer group operations: set-position")
    p = gsub("set-position", help="move a group's position (skip or reprocess)")
    p.add_argument("topic")
    p.add_argument("--group", required=True)
    p.add_argument(
        "--to",
        required=True,
        metavar="TARGET",
        help="latest | earliest | time:<ISO-8601 or epoch ms> | id:<ID>",
    )
    p.add_argument(
        "--partition", type=int, action="append", help="repeatable; default: all partitions"
    )
    p.add_argument("--dry-run", action="store_true", help="show the plan, move nothing")
    p.add_argument("--yes", action="store_true", help="move without typing the group name")
    p.add_argument(
        "--force",
        action="store_true",
        help="move a group a pipeline moves (its checkpoints name it): refused without it",
    )
    add_who_why(p)


def _human(d: dict[str, Any]) -> str:
    verb = "moved" if d["applied"] else "dry run"
    target = d["target"]["kind"] + (
        f":{d['target']['value']}" if d["target"]["value"] is not None else ""
    )
    head = f"{verb}: group {d['group']} on {d['topic']} to {target}"
    totals = (
        f"skipped {d['skipped']}, delivered again {d['redelivered']} ({d['direction']})\n"
        + d["note"]
    )
    lines = [head, table(d["moves"], COLUMNS), totals]
    if d.get("pipelines"):
        lines.append(
            f"pipeline {', '.join(d['pipelines'])} moves this group (its sink commits the "
            "group's position): the move is refused without --force"
        )
    return "\n".join(lines)


def _confirm(group: str) -> None:
    if not sys.stdin.isatty():
        raise UsageError(
            "refusing to move a group position without confirmation: not a terminal; "
            "pass --yes (or --dry-run to see the plan)"
        )
    typed = input(f"Type the group name ({group}) to move it: ")
    if typed.strip() != group:
        raise UsageError("confirmation did not match the group name; nothing moved")


def cmd_group(args: argparse.Namespace, out: Out) -> int:
    from mqcore.admin import Admin, PositionTarget

    target = PositionTarget.parse(args.to)
    outside_check(args)
    admin = Admin(config(args))
    if args.dry_run or not args.yes:
        plan = admin.plan_position(args.topic, args.group, target, args.partition)
        if args.dry_run:
            out.emit(plan, _human)
            return 0
        print(_human(jsonable(plan)), file=sys.stderr if out.as_json else sys.stdout)
        _confirm(args.group)
    done = admin.set_position(args.topic, args.group, target, args.partition, force=args.force)
    moved = jsonable(done)
    what = {k: moved.get(k) for k in ("target", "skipped", "redelivered", "direction")}
    what["partitions"] = args.partition or "all"
    outside_record(args, "position.set", topic=args.topic, group=args.group, what=what)
    out.emit(done, _human)
    return 0
