"""``mqcore retries``: a topic's retry set: list, get, retry (now), delete.

``list`` pages by due time (``--state due|scheduled``, ``--order desc``, ``--key``,
``--text``, ``--partition``; ``--cursor`` from ``next_cursor``, or ``--offset`` on an
unfiltered list). ``retry`` and ``delete`` take item ids, or ``--all-matching`` with the
same filters (at most 10000 items a call; ``more`` and ``next_cursor`` say whether to
run again). Deleting every matching item asks for ``--yes``.
"""

from __future__ import annotations

import argparse
from typing import Any

from mqcore.cli.common import (
    AddParser,
    Out,
    Parser,
    UsageError,
    add_group,
    config,
    human_json,
    jsonable,
    table,
)
from mqcore.retries import RetryFilter, RetryItem, RetryOutcome

__all__ = ["add_parsers", "cmd_retries"]

COLUMNS = ["id", "due_at", "partition", "retry_count", "key", "error", "payload"]
ERROR_HEADER = "x-runtime-error-message"


def _filters(p: argparse.ArgumentParser) -> None:
    p.add_argument("--state", choices=["all", "due", "scheduled"], default="all")
    p.add_argument("--order", choices=["asc", "desc"], default="asc", help="by due time")
    p.add_argument("--key", help="exact message key")
    p.add_argument("--text", help="substring of payload or headers (case-insensitive)")
    p.add_argument("--partition", type=int)


def add_parsers(add: AddParser, common: Parser) -> None:
    sub = add_group(add, common, "retries", help="the retry set: list, get, retry now, delete")
    p = sub("list")
    p.add_argument("topic")
    _filters(p)
    p.add_argument("--limit", type=int, default=50)
    p.add_argument("--cursor", help="continue after a page: its next_cursor")
    p.add_argument("--offset", type=int, default=0, help="skip N items (unfiltered lists)")
    p = sub("get")
    p.add_argument("topic")
    p.add_argument("id")
    for name, what in (("retry", "put items back on their partition now"), ("delete", "delete")):
        p = sub(name, help=what)
        p.add_argument("topic")
        p.add_argument("ids", nargs="*", metavar="ID")
        p.add_argument("--all-matching", action="store_true", help="every item the filters match")
        _filters(p)
        p.add_argument("--cursor", help="continue an --all-matching run after its next_cursor")
        if name == "delete":
            p.add_argument("--yes", action="store_true", help="really delete every matching item")


def item_row(item: RetryItem) -> dict[str, Any]:
    """An item as the CLI prints it (the API's row has the same names)."""
    from mqcore.clock import iso_from_ms

    data = jsonable(item)
    return {
        "id": data.pop("id"),
        "due_ms": item.due_ms,
        "due_at": iso_from_ms(min(item.due_ms, 253402300799999)),
        "partition": data.pop("partition"),
        "retry_count": data.pop("retry_count"),
        "key": data.pop("key"),
        "error": item.headers.get(ERROR_HEADER),
        "payload": data.pop("payload"),
        "headers": data.pop("headers"),
        **data,
    }


def _outcome(out: RetryOutcome) -> dict[str, Any]:
    data: dict[str, Any] = jsonable(out)
    data.pop("ids", None)
    return data


def _flt(args: argparse.Namespace) -> RetryFilter:
    return RetryFilter(
        state=args.state, order=args.order, key=args.key, text=args.text, partition=args.partition
    )


def cmd_retries(args: argparse.Namespace, out: Out) -> int:
    from mqcore.retries import RetrySet

    rs = RetrySet(config(args))
    if args.retries_cmd == "list":
        page = rs.page(
            args.topic, flt=_flt(args), limit=args.limit, cursor=args.cursor, offset=args.offset
        )
        data = {
            "items": [item_row(i) for i in page.items],
            "next_cursor": page.next_cursor,
            "scanned": page.scanned,
            "complete": page.complete,
            "total": page.total,
            "due": page.due,
        }
        out.emit(data, lambda d: table(d["items"], COLUMNS))
    elif args.retries_cmd == "get":
        data = item_row(rs.get(args.topic, args.id))
        out.emit(data, human_json)
    else:
        deleting = args.retries_cmd == "delete"
        if args.all_matching:
            if args.ids:
                raise UsageError("name ids or --all-matching, not both")
            if deleting and not args.yes:
                raise UsageError("deleting every matching retry item needs --yes")
            act = rs.delete_matching if deleting else rs.retry_matching
            result = act(args.topic, _flt(args), cursor=args.cursor)
        else:
            if not args.ids:
                raise UsageError("name the retry item ids, or --all-matching")
            result = (rs.delete if deleting else rs.retry_now)(args.topic, args.ids)
        data = {"topic": args.topic, **_outcome(result)}
        verb = "deleted" if deleting else "retried"
        out.emit(data, lambda d: f"{verb} {d[verb]}, missing {d['missing']}, more: {d['more']}")
    return 0
