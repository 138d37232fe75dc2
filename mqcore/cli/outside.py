"""``mqcore outside-events``: the actions taken outside the console, newest first.

What :mod:`mqcore.outside_events` recorded: position moves, trims, replays and purges made
with the mqcore CLI or library, with who, what and why. ``--before`` takes the id of the
oldest event of a previous page.
"""

from __future__ import annotations

import argparse
from typing import Any

from mqcore.cli.common import AddParser, Out, Parser, config, table

__all__ = ["add_parsers", "cmd_outside_events"]

COLUMNS = ["id", "at", "action", "topic", "group", "who", "why"]


def add_parsers(add: AddParser, common: Parser) -> None:
    p = add(
        "outside-events",
        parents=[common],
        help="position moves, trims, replays and purges made outside the console",
    )
    p.add_argument("--limit", type=int, default=50, help="at most this many (1..1000)")
    p.add_argument("--before", help="events older than this id (a previous page's last)")


def cmd_outside_events(args: argparse.Namespace, out: Out) -> int:
    from mqcore.outside_events import OutsideEvents

    events = OutsideEvents(config(args)).recent(args.limit, before=args.before)
    out.emit({"events": events}, _human)
    return 0


def _human(data: dict[str, Any]) -> str:
    from mqcore.clock import iso_from_ms

    rows = [{**e, "at": iso_from_ms(e["at_ms"]), "group": e["group"] or ""} for e in data["events"]]
    return table(rows, COLUMNS) if rows else "no events"
