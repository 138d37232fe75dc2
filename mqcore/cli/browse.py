"""``mqcore browse``: the topic message browser (newest or oldest first, filters, cursor);
``mqcore message``: one message and where it went (delivery per group, retries, dead letter)."""

from __future__ import annotations

import argparse
from typing import Any

from mqcore.cli.common import AddParser, Out, Parser, UsageError, config, plain, table

__all__ = ["add_parsers", "cmd_browse", "cmd_message"]


def add_parsers(add: AddParser, common: Parser) -> None:
    p = add(
        "browse",
        parents=[common],
        help="browse a topic's messages (filters, cursor paging, bounded scan)",
    )
    p.add_argument("topic")
    p.add_argument(
        "--partition", type=int, action="append", help="only this partition (repeatable)"
    )
    p.add_argument("--oldest", action="store_true", help="oldest first (default: newest first)")
    start = p.add_mutually_exclusive_group()
    start.add_argument("--from-id", help="start at this entry id (inclusive)")
    start.add_argument("--from-time", help="start at this time: epoch ms or ISO-8601")
    p.add_argument("--limit", type=int, default=20, help="messages per page (1..500)")
    p.add_argument("--max-scan", type=int, help="entries scanned at most (default 10000)")
    p.add_argument("--cursor", help="next_cursor of the previous page (same query)")
    p.add_argument("--key", help="only this message key")
    p.add_argument("--header", metavar="NAME[=VALUE]", help="only messages with this header")
    p.add_argument("--text", help="substring of payload or headers (case-insensitive)")
    p.add_argument(
        "--where",
        metavar="EXPR",
        help="expression, e.g. 'payload.customer == \"c-1\" and payload.amount > 100'",
    )
    p.add_argument("--max-bytes", type=int, default=1024, help="payload bytes per message")
    m = add("message", parents=[common], help="one message, its delivery per group and retries")
    m.add_argument("topic")
    m.add_argument("partition", type=int)
    m.add_argument("id")
    m.add_argument("--max-bytes", type=int, default=65536, help="payload bytes shown")


def cmd_browse(args: argparse.Namespace, out: Out) -> int:
    from mqcore.admin import Admin
    from mqcore.browse import BrowseQuery, Filters, browse_topic
    from mqcore.browse.rows import page_dict, parse_start_time
    from mqcore.browse.scan import DEFAULT_MAX_SCAN

    if args.max_bytes < 1:
        raise UsageError("--max-bytes must be >= 1")
    filters = Filters.of(key=args.key, header=args.header, text=args.text, expression=args.where)
    query = BrowseQuery(
        partitions=args.partition,
        order="oldest" if args.oldest else "newest",
        from_id=args.from_id,
        from_ms=parse_start_time(args.from_time) if args.from_time else None,
        limit=args.limit,
        max_scan=args.max_scan if args.max_scan is not None else DEFAULT_MAX_SCAN,
        cursor=args.cursor,
    )
    page = browse_topic(Admin(config(args)), args.topic, query, filters)
    out.emit(page_dict(page, args.max_bytes), _human)
    return 0


def cmd_message(args: argparse.Namespace, out: Out) -> int:
    from dataclasses import asdict

    from mqcore.admin import Admin
    from mqcore.browse import message_trace
    from mqcore.browse.rows import message_row

    if args.max_bytes < 1:
        raise UsageError("--max-bytes must be >= 1")
    admin = Admin(config(args))
    message = admin.message(args.topic, args.partition, args.id)
    data = {**message_row(message, args.max_bytes), "trace": asdict(message_trace(admin, message))}
    out.emit(data, _human_message)
    return 0


def _human_message(data: dict[str, Any]) -> str:
    trace = data["trace"]
    lines = [f"partition {data['partition']} id {data['id']} key {plain(data['key'] or '-')}"]
    lines.append(table(trace["groups"], ["group", "state", "consumer", "deliveries"]))
    retries = [r["id"] for r in trace["retries"]] + [
        f"scheduled (retry {s['retry_count']})" for s in trace["scheduled"]
    ]
    lines.append("retries: " + (", ".join(retries) or "none found"))
    letters = [d["id"] for d in trace["dead_letters"]]
    lines.append("dead letter: " + (", ".join(letters) or "none found"))
    lines.append("payload: " + plain(data["payload"]))
    return "\n".join(lines)


def _human(data: dict[str, Any]) -> str:
    cols = ["partition", "id", "key", "timestamp", "payload"]
    lines = [table(data["messages"], cols)]
    tail = f"scanned {data['scanned']}"
    if data["stopped_at_bound"]:
        tail += f" (stopped at the bound of {data['max_scan']}; go on with --cursor)"
    if data["next_cursor"]:
        tail += f"\nnext: --cursor {data['next_cursor']}"
    lines.append(tail)
    return "\n".join(lines)
