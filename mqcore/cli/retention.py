"""``mqcore retention`` (what each rule would delete) and ``mqcore housekeep`` (trim).

``housekeep`` deletes entries: it asks for the word ``trim`` on a terminal unless
``--yes``; ``--dry-run`` shows each partition's first round and deletes nothing.
It never deletes what a group on the stream has not read and acked, except for
groups named with ``--ignore-group``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from mqcore.cli.common import AddParser, Out, Parser, UsageError, config, jsonable, table

__all__ = ["add_parsers", "cmd_housekeep", "cmd_retention"]

TRIM_COLUMNS = ["topic", "partition", "deleted", "rounds", "held_by", "held", "more"]
GROUP_COLUMNS = ["partition", "group", "floor_id", "unread", "frontier_id", "lease_live"]
RULE_COLUMNS = ["partition", "rule", "by", "would_delete", "held_by", "at_risk", "detail"]


def _rules(p: argparse.ArgumentParser) -> None:
    p.add_argument("--maxlen", type=int, help="keep at most N entries per partition")
    p.add_argument("--max-age", metavar="DURATION", help="delete entries older than, e.g. 7d")
    p.add_argument(
        "--consumed", action="store_true", help="delete entries every group read and acked"
    )
    p.add_argument(
        "--ignore-group", action="append", default=[], metavar="GROUP",
        help="repeatable: a group whose unread entries may go (an abandoned group)",
    )  # fmt: skip


def add_parsers(add: AddParser, common: Parser) -> None:
    p = add("retention", parents=[common], help="per partition: floors and each rule's next delete")
    p.add_argument("topic")
    _rules(p)
    p.add_argument("--java-maxlen", type=int, help="the Java deployment's retentionMaxLen")
    p.add_argument("--java-retention", metavar="DURATION", help="the Java deployment's retentionMs")
    p.add_argument(
        "--java-frontier", action="store_true", help="a Java housekeeper trims by commit frontier"
    )
    h = add("housekeep", parents=[common], help="trim partition streams by retention rules")
    h.add_argument("--topic", action="append", help="repeatable; default: every topic")
    _rules(h)
    h.add_argument("--dry-run", action="store_true", help="show the first round, delete nothing")
    h.add_argument("--yes", action="store_true", help="trim without typing 'trim'")


def _policy(args: argparse.Namespace) -> Any:
    from mqcore.retention import RetentionPolicy

    return RetentionPolicy.build(
        maxlen=args.maxlen,
        max_age=args.max_age,
        consumed=args.consumed,
        ignore_groups=args.ignore_group,
    )


def _view_human(d: dict[str, Any]) -> str:
    groups = [{"partition": p["partition"], **g} for p in d["partitions"] for g in p["groups"]]
    rules = [
        {"partition": p["partition"], **r, "at_risk": r["at_risk"] or None}
        for p in d["partitions"]
        for r in p["rules"]
    ]
    risky = [p["partition"] for p in d["partitions"] if p["at_risk"]]
    tail = f"unread entries at risk on partitions {risky}" if risky else "no unread entry at risk"
    return "\n\n".join([table(groups, GROUP_COLUMNS), table(rules, RULE_COLUMNS), tail])


def cmd_retention(args: argparse.Namespace, out: Out) -> int:
    from mqcore.admin import Admin
    from mqcore.retention import JavaRetention
    from mqcore.retention.view import topic_retention

    policy = _policy(args)
    java = None
    if args.java_maxlen is not None or args.java_retention or args.java_frontier:
        java = JavaRetention.from_mapping(
            {
                "maxlen": args.java_maxlen or 0,
                "retention": args.java_retention,
                "frontier_trim": args.java_frontier,
            }
        )
    admin = Admin(config(args))
    admin.partition_count(args.topic)  # unknown topic: a clear error
    parts = topic_retention(admin.client, admin.keys, args.topic, policy, java)
    data = {
        "topic": args.topic,
        "policy": policy.as_dict(),
        "java": java.as_dict() if java else None,
        "partitions": [p.as_dict() for p in parts],
    }
    out.emit(data, _view_human)
    return 0


def cmd_housekeep(args: argparse.Namespace, out: Out) -> int:
    from mqcore.admin import Admin
    from mqcore.retention import housekeep

    policy = _policy(args)
    if not policy.enabled:
        raise UsageError("no rule given: pass --maxlen, --max-age and/or --consumed")
    admin = Admin(config(args))
    for topic in args.topic or ():
        admin.partition_count(topic)
    if not args.dry_run and not args.yes:
        if not sys.stdin.isatty():
            raise UsageError("refusing to trim without confirmation: pass --yes or --dry-run")
        if input("Type 'trim' to delete entries by these rules: ").strip() != "trim":
            raise UsageError("not confirmed; nothing deleted")
    done = housekeep(
        admin.client,
        admin.keys,
        policy,
        topics=args.topic,
        dry_run=args.dry_run,
        encoding=admin.config.encoding,
    )
    data = {
        "dry_run": args.dry_run,
        "policy": policy.as_dict(),
        "deleted": sum(t.deleted for t in done),
        "partitions": [t.as_dict() for t in done],
    }

    def human(d: dict[str, Any]) -> str:
        rows = [r for r in d["partitions"] if r["deleted"] or r["held_by"]]
        verb = "would delete (first round)" if d["dry_run"] else "deleted"
        return f"{table(rows, TRIM_COLUMNS)}\n{verb} {d['deleted']} entries"

    out.emit(jsonable(data), human)
    return 0
