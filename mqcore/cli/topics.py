"""``mqcore topic``: create, list, describe, grow, delete, trim topics; ``partitions``:
length, last id and memory per partition with their skew (max vs mean), and with
``--hot-keys P`` the most frequent keys of partition P's newest entries (bounded samples)."""

from __future__ import annotations

import argparse

from mqcore.cli.common import (
    AddParser,
    Out,
    Parser,
    UsageError,
    add_group,
    add_who_why,
    config,
    outside_check,
    outside_record,
    table,
)
from mqcore.cli.partitions import cmd_partitions

__all__ = ["add_parsers", "cmd_topic"]


def add_parsers(add: AddParser, common: Parser) -> None:
    tsub = add_group(
        add, common, "topic", help="create, list, describe, grow, delete, trim topics; partitions"
    )
    p = tsub("create")
    p.add_argument("name")
    p.add_argument("--partitions", type=int, default=1)
    p.add_argument("--group", action="append", help="consumer group (repeatable)")
    tsub("list")
    p = tsub("describe")
    p.add_argument("name")
    p = tsub("grow")
    p.add_argument("name")
    p.add_argument("--partitions", type=int, required=True)
    p = tsub("delete")
    p.add_argument("name")
    p.add_argument("--yes", action="store_true", help="really delete all keys of the topic")
    p = tsub("trim", help="trim by length or age, never past a group's unread entries")
    p.add_argument("name")
    p.add_argument("--maxlen", type=int)
    p.add_argument("--min-age-ms", type=int)
    p.add_argument("--dlq", action="store_true", help="trim the DLQ instead of the partitions")
    add_who_why(p)
    p = tsub("partitions", help="length, last id, memory and skew per partition")
    p.add_argument("name")
    p.add_argument("--samples", type=int, help="MEMORY USAGE SAMPLES (default 5, at most 50)")
    p.add_argument(
        "--hot-keys", type=int, metavar="P", help="the top keys of partition P (a sample)"
    )
    p.add_argument("--count", type=int, help="newest entries sampled for --hot-keys (1..2000)")


def cmd_topic(args: argparse.Namespace, out: Out) -> int:
    from mqcore.topics import Topics

    if args.topic_cmd == "partitions":
        return cmd_partitions(args, out)

    topics = Topics(config(args))
    cols = ["topic", "partitions", "length", "dlq_length", "groups"]
    if args.topic_cmd == "list":
        out.emit(topics.list(), lambda d: table(d, cols))
    elif args.topic_cmd == "create":
        groups = args.group or ["default-group"]
        out.emit(
            topics.create(args.name, args.partitions, groups=groups), lambda d: table([d], cols)
        )
    elif args.topic_cmd == "describe":
        out.emit(topics.describe(args.name), lambda d: table([d], cols))
    elif args.topic_cmd == "grow":
        out.emit(topics.grow(args.name, args.partitions), lambda d: table([d], cols))
    elif args.topic_cmd == "delete":
        if not args.yes:
            raise UsageError(f"deleting topic {args.name!r} removes all its data: add --yes")
        topics.delete(args.name)
        out.emit({"topic": args.name, "deleted": True}, lambda d: f"deleted topic {d['topic']}")
    elif args.topic_cmd == "trim":
        from mqcore.retention.trim import trim_topic

        outside_check(args)
        removed = trim_topic(
            topics, args.name, maxlen=args.maxlen, min_age_ms=args.min_age_ms, dlq=args.dlq
        )
        what = {"maxlen": args.maxlen, "min_age_ms": args.min_age_ms, "dlq": args.dlq}
        outside_record(args, "topic.trim", topic=args.name, what={**what, "removed": removed})
        out.emit({"topic": args.name, "removed": removed}, lambda d: f"removed {d['removed']}")
    return 0
