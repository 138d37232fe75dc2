"""``mqcore dlq``: dead letters: list, get, replay, delete, purge."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any

from mqcore.cli.common import (
    AddParser,
    Out,
    Parser,
    UsageError,
    add_format,
    add_group,
    add_who_why,
    config,
    csv_out,
    csv_wanted,
    human_json,
    jsonable,
    outside_check,
    outside_record,
    table,
)
from mqcore.export_rows import DLQ_COLUMNS, letter_row
from mqcore.models import DlqLetter, DlqPage

if TYPE_CHECKING:
    from mqcore.dlq import DeadLetters

__all__ = ["add_parsers", "cmd_dlq"]


def add_parsers(add: AddParser, common: Parser) -> None:
    dsub = add_group(add, common, "dlq", help="dead letters: list, get, replay, delete, purge")
    p = dsub("list")
    p.add_argument("topic")
    p.add_argument("--limit", type=int, default=50)
    p.add_argument("--before", help="cursor: list letters older than this id")
    p.add_argument("--partition", type=int)
    p.add_argument("--key")
    p.add_argument("--text", help="substring of payload or headers (case-insensitive)")
    add_format(p, every="every matching letter, newest first, page by page")
    p = dsub("get")
    p.add_argument("topic")
    p.add_argument("id")
    p = dsub("replay")
    p.add_argument("topic")
    p.add_argument("id")
    p.add_argument("--force", action="store_true", help="replay even if already replayed")
    p.add_argument("--by", help="who replays (recorded; default $USER)")
    p.add_argument("--target-topic")
    p.add_argument("--target-partition", type=int)
    add_who_why(p, by=False)
    p = dsub("delete")
    p.add_argument("topic")
    p.add_argument("id")
    p = dsub("purge")
    p.add_argument("topic")
    p.add_argument("--yes", action="store_true", help="really remove every letter")
    add_who_why(p)


def _letter_row(letter: DlqLetter) -> dict[str, Any]:
    data = jsonable(letter)
    data.pop("replays", None)
    return {
        "id": data.pop("id"),
        "partition": data.pop("partition"),
        "original_id": data.pop("original_id"),
        "retry_count": data.pop("retry_count"),
        "failed_at": data.pop("failed_at"),
        "key": data.pop("key"),
        "payload": data.pop("payload"),
        "headers": data.pop("headers"),
        **data,
    }


def _page(dlq: DeadLetters, args: argparse.Namespace, *, limit: int, before: str | None) -> DlqPage:
    """A page of ``args.topic``'s letters, newest first, under the command's filters
    (``--partition``, ``--key``, ``--text``)."""
    return dlq.page(
        args.topic,
        limit=limit,
        before=before,
        partition=args.partition,
        key=args.key,
        text=args.text,
    )


def cmd_dlq(args: argparse.Namespace, out: Out) -> int:
    from mqcore.dlq import DeadLetters

    dlq = DeadLetters(config(args))
    if args.dlq_cmd == "list" and (csv_wanted(args) or args.all):
        return _dlq_rows(dlq, args, out)
    if args.dlq_cmd == "list":
        page = _page(dlq, args, limit=args.limit, before=args.before)
        data = {
            "letters": [_letter_row(x) for x in page.letters],
            "next_cursor": page.next_cursor,
            "scanned": page.scanned,
            "complete": page.complete,
        }
        cols = ["id", "partition", "original_id", "retry_count", "failed_at", "key", "payload"]
        out.emit(data, lambda d: table(d["letters"], cols))
    elif args.dlq_cmd == "get":
        letter = dlq.get(args.topic, args.id)
        data = {**_letter_row(letter), "replays": jsonable(letter.replays)}
        out.emit(data, human_json)
    elif args.dlq_cmd == "replay":
        outside_check(args)
        res = dlq.replay(
            args.topic,
            args.id,
            by=args.by or os.environ.get("USER", ""),
            force=args.force,
            target_topic=args.target_topic,
            target_partition=args.target_partition,
        )
        data = {
            "replayed": res.replayed,
            "new_id": res.new_id,
            "topic": res.topic,
            "partition": res.partition,
            "reason": res.reason,
            "dlq_id": res.dlq_id,
        }
        if res.replayed:
            outside_record(args, "dlq.replay", topic=args.topic, what=data)
        out.emit(
            data,
            lambda d: (
                f"{d['reason']}: {d['dlq_id']} -> {d['topic']} p{d['partition']} {d['new_id']}"
            ),
        )
    elif args.dlq_cmd == "delete":
        deleted = dlq.delete(args.topic, args.id)
        out.emit({"deleted": deleted, "id": args.id}, lambda d: f"deleted: {d['deleted']}")
    elif args.dlq_cmd == "purge":
        if not args.yes:
            raise UsageError(f"purging the DLQ of {args.topic!r} removes every letter: add --yes")
        outside_check(args)
        count = dlq.purge(args.topic)
        outside_record(args, "dlq.purge", topic=args.topic, what={"purged": count})
        out.emit({"purged": count, "topic": args.topic}, lambda d: f"purged {d['purged']} letters")
    return 0


def _dlq_rows(dlq: DeadLetters, args: argparse.Namespace, out: Out) -> int:
    """``dlq list --format csv`` (one page) or ``--all`` (every matching letter, pages of
    200, at most ``--max-rows``): the console's DLQ export rows."""
    limit = args.max_rows if args.all else args.limit

    def letters() -> Any:
        before, left = args.before, limit
        while left > 0:
            page = _page(dlq, args, limit=min(200, left) if args.all else left, before=before)
            for letter in page.letters[:left]:
                yield letter_row(letter)
            left -= len(page.letters)
            if not args.all or page.next_cursor is None:
                return
            before = page.next_cursor

    if csv_wanted(args):
        csv_out(DLQ_COLUMNS, letters())
    else:
        rows = list(letters())
        out.emit({"letters": rows, "rows": len(rows), "max_rows": limit}, str)
    return 0
