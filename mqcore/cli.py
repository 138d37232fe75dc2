"""``python -m mqcore`` (also ``mqcore``): operate a deployment from a shell.

Human tables by default, ``--json`` for scripts (field names are a contract: add,
never rename). Unknown topic, bad id or bad arguments: exit code 2 and one line
on stderr, never a traceback. Redis unreachable: exit code 1, one line.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, is_dataclass
from typing import Any, NoReturn

from mqcore.config import MQConfig
from mqcore.errors import ConnectionLostError, MQError
from mqcore.models import DlqLetter, Message

__all__ = ["main"]

EXIT_USAGE = 2
EXIT_FAILURE = 1


class UsageError(Exception):
    """Raised for bad command-line input (exit code 2)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


# --- output -----------------------------------------------------------------------------------


def _jsonable(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        value = asdict(value)
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if isinstance(v, bytes):
                out[f"{k}_hex"] = v.hex()
                continue
            out[str(k)] = _jsonable(v)
        return out
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def _table(rows: list[dict[str, Any]], columns: Sequence[str]) -> str:
    def cell(v: Any) -> str:
        text = "-" if v is None else str(v)
        text = text.replace("\n", "\\n")
        return text if len(text) <= 60 else text[:57] + "..."

    cells = [[cell(r.get(c)) for c in columns] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.upper().ljust(w) for c, w in zip(columns, widths, strict=True))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(line.rstrip() for line in lines)


class _Out:
    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json

    def emit(self, data: Any, human: Callable[[Any], str]) -> None:
        data = _jsonable(data)
        if self.as_json:
            print(json.dumps(data, ensure_ascii=False))
        else:
            print(human(data))


def _letter_row(letter: DlqLetter) -> dict[str, Any]:
    data = _jsonable(letter)
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


# --- commands ---------------------------------------------------------------------------------


def _config(args: argparse.Namespace) -> MQConfig:
    return MQConfig.from_url(args.redis_url)


def _header(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise UsageError(f"--header takes NAME=VALUE, got {text!r}")
    return name, value


def cmd_topic(args: argparse.Namespace, out: _Out) -> int:
    from mqcore.topics import Topics

    topics = Topics(_config(args))
    cols = ["topic", "partitions", "length", "dlq_length", "groups"]
    if args.topic_cmd == "list":
        out.emit(topics.list(), lambda d: _table(d, cols))
    elif args.topic_cmd == "create":
        groups = args.group or ["default-group"]
        out.emit(
            topics.create(args.name, args.partitions, groups=groups), lambda d: _table([d], cols)
        )
    elif args.topic_cmd == "describe":
        out.emit(topics.describe(args.name), lambda d: _table([d], cols))
    elif args.topic_cmd == "grow":
        out.emit(topics.grow(args.name, args.partitions), lambda d: _table([d], cols))
    elif args.topic_cmd == "delete":
        if not args.yes:
            raise UsageError(f"deleting topic {args.name!r} removes all its data: add --yes")
        topics.delete(args.name)
        out.emit({"topic": args.name, "deleted": True}, lambda d: f"deleted topic {d['topic']}")
    elif args.topic_cmd == "trim":
        removed = topics.trim(
            args.name, maxlen=args.maxlen, min_age_ms=args.min_age_ms, dlq=args.dlq
        )
        out.emit({"topic": args.name, "removed": removed}, lambda d: f"removed {d['removed']}")
    return 0


def cmd_produce(args: argparse.Namespace, out: _Out) -> int:
    from mqcore.producer import Producer

    headers = dict(_header(h) for h in args.header or [])
    with Producer(_config(args)) as producer:
        res = producer.send(
            args.topic,
            args.payload,
            key=args.key,
            headers=headers or None,
            partition=args.partition,
        )
    data = {"topic": res.topic, "partition": res.partition, "id": res.id}
    out.emit(data, lambda d: f"{d['topic']} partition {d['partition']} id {d['id']}")
    return 0


def cmd_lag(args: argparse.Namespace, out: _Out) -> int:
    from mqcore.admin import Admin

    groups = Admin(_config(args)).lag(args.topic, args.group)
    data = {"topic": args.topic, "groups": groups}

    def human(d: dict[str, Any]) -> str:
        rows = []
        for g in d["groups"]:
            rows.append({**g, "partition": "all"})
            rows.extend({"group": g["group"], **p} for p in g["partitions"])
        cols = ["group", "partition", "lag", "lag_ms", "pending", "lag_exact", "last_delivered_id"]
        return _table(rows, cols) if rows else f"no consumer groups on {d['topic']}"

    out.emit(data, human)
    return 0


def cmd_pending(args: argparse.Namespace, out: _Out) -> int:
    from mqcore.admin import Admin

    page = Admin(_config(args)).pending(
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
        return _table(d["entries"], cols) + "\n" + note

    out.emit(page, human)
    return 0


def cmd_leases(args: argparse.Namespace, out: _Out) -> int:
    from mqcore.admin import Admin

    leases = Admin(_config(args)).leases(args.topic, args.group)
    out.emit(leases, lambda d: _table(d, ["group", "partition", "owner", "ttl_ms", "epoch"]))
    return 0


def cmd_dlq(args: argparse.Namespace, out: _Out) -> int:
    from mqcore.dlq import DeadLetters

    dlq = DeadLetters(_config(args))
    if args.dlq_cmd == "list":
        page = dlq.page(
            args.topic,
            limit=args.limit,
            before=args.before,
            partition=args.partition,
            key=args.key,
            text=args.text,
        )
        data = {
            "letters": [_letter_row(x) for x in page.letters],
            "next_cursor": page.next_cursor,
            "scanned": page.scanned,
            "complete": page.complete,
        }
        cols = ["id", "partition", "original_id", "retry_count", "failed_at", "key", "payload"]
        out.emit(data, lambda d: _table(d["letters"], cols))
    elif args.dlq_cmd == "get":
        letter = dlq.get(args.topic, args.id)
        data = {**_letter_row(letter), "replays": _jsonable(letter.replays)}
        out.emit(data, lambda d: json.dumps(d, indent=2, ensure_ascii=False))
    elif args.dlq_cmd == "replay":
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
        count = dlq.purge(args.topic)
        out.emit({"purged": count, "topic": args.topic}, lambda d: f"purged {d['purged']} letters")
    return 0


def demo_handler(
    fail_rate: float, poison_marker: str | None, sleep_ms: int, rng: random.Random
) -> Callable[[Message], Any]:
    """The demo consumer's handler: random failures (retry), poison payloads (dead letter)."""
    from mqcore.consumer import Outcome

    def handle(message: Message) -> Outcome:
        if sleep_ms:
            time.sleep(sleep_ms / 1000)
        if poison_marker and poison_marker in message.payload:
            return Outcome.FAIL
        if fail_rate and rng.random() < fail_rate:
            raise RuntimeError("demo failure (--fail-rate)")
        return Outcome.SUCCESS

    return handle


def cmd_consume(args: argparse.Namespace, out: _Out) -> int:
    from mqcore.consumer import Consumer, ConsumerOptions

    if not 0.0 <= args.fail_rate <= 1.0:
        raise UsageError("--fail-rate must be between 0 and 1")
    if args.sleep_ms < 0:
        raise UsageError("--sleep-ms must be >= 0")
    options = ConsumerOptions(group=args.group, name=args.name, max_partitions=args.max_partitions)
    handler = demo_handler(args.fail_rate, args.poison_marker, args.sleep_ms, random.Random())
    consumer = Consumer(_config(args), args.topic, handler, options)
    consumer.install_signal_handlers()
    consumer.run()
    stats = {k: v for k, v in vars(consumer.stats).items() if not k.startswith("_")}
    data = {"consumer": consumer.name, "topic": args.topic, "group": args.group, **stats}
    out.emit(data, lambda d: " ".join(f"{k}={v}" for k, v in d.items()))
    return 0


def cmd_retry_mover(args: argparse.Namespace, out: _Out) -> int:
    from mqcore.retry import RetryMover

    if args.interval_s <= 0:
        raise UsageError("--interval-s must be > 0")
    mover = RetryMover(_config(args))
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    mover.run(stop, args.interval_s)
    out.emit({"stopped": True}, lambda d: "retry mover stopped")
    return 0


# --- parser -----------------------------------------------------------------------------------


def build_parser() -> _Parser:
    common = _Parser(add_help=False)
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS)
    common.add_argument("--redis-url", default=argparse.SUPPRESS)
    parser = _Parser(prog="mqcore", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--redis-url",
        default=os.environ.get("MQ_REDIS_URL", "redis://127.0.0.1:6379/0"),
        help="Redis URL (env MQ_REDIS_URL); redis+cluster:// for Redis Cluster",
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    topic = sub.add_parser("topic", help="create, list, describe, grow, delete, trim topics")
    tsub = topic.add_subparsers(dest="topic_cmd", required=True, parser_class=_Parser)
    p = tsub.add_parser("create", parents=[common])
    p.add_argument("name")
    p.add_argument("--partitions", type=int, default=1)
    p.add_argument("--group", action="append", help="consumer group (repeatable)")
    tsub.add_parser("list", parents=[common])
    p = tsub.add_parser("describe", parents=[common])
    p.add_argument("name")
    p = tsub.add_parser("grow", parents=[common])
    p.add_argument("name")
    p.add_argument("--partitions", type=int, required=True)
    p = tsub.add_parser("delete", parents=[common])
    p.add_argument("name")
    p.add_argument("--yes", action="store_true", help="really delete all keys of the topic")
    p = tsub.add_parser("trim", parents=[common])
    p.add_argument("name")
    p.add_argument("--maxlen", type=int)
    p.add_argument("--min-age-ms", type=int)
    p.add_argument("--dlq", action="store_true", help="trim the DLQ instead of the partitions")

    p = sub.add_parser("produce", parents=[common], help="send one message")
    p.add_argument("topic")
    p.add_argument("--payload", required=True)
    p.add_argument("--key")
    p.add_argument("--header", action="append", metavar="NAME=VALUE")
    p.add_argument("--partition", type=int)

    p = sub.add_parser("lag", parents=[common], help="lag per group and partition")
    p.add_argument("topic")
    p.add_argument("--group")

    p = sub.add_parser("pending", parents=[common], help="pending entries of a group")
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

    p = sub.add_parser("leases", parents=[common], help="partition owners, time left, epochs")
    p.add_argument("topic")
    p.add_argument("--group")

    dlq = sub.add_parser("dlq", help="dead letters: list, get, replay, delete, purge")
    dsub = dlq.add_subparsers(dest="dlq_cmd", required=True, parser_class=_Parser)
    p = dsub.add_parser("list", parents=[common])
    p.add_argument("topic")
    p.add_argument("--limit", type=int, default=50)
    p.add_argument("--before", help="cursor: list letters older than this id")
    p.add_argument("--partition", type=int)
    p.add_argument("--key")
    p.add_argument("--text", help="substring of payload or headers (case-insensitive)")
    p = dsub.add_parser("get", parents=[common])
    p.add_argument("topic")
    p.add_argument("id")
    p = dsub.add_parser("replay", parents=[common])
    p.add_argument("topic")
    p.add_argument("id")
    p.add_argument("--force", action="store_true", help="replay even if already replayed")
    p.add_argument("--by", help="who replays (recorded; default $USER)")
    p.add_argument("--target-topic")
    p.add_argument("--target-partition", type=int)
    p = dsub.add_parser("delete", parents=[common])
    p.add_argument("topic")
    p.add_argument("id")
    p = dsub.add_parser("purge", parents=[common])
    p.add_argument("topic")
    p.add_argument("--yes", action="store_true", help="really remove every letter")

    p = sub.add_parser("consume", parents=[common], help="run a demo consumer until SIGTERM")
    p.add_argument("topic")
    p.add_argument("--group", required=True)
    p.add_argument("--fail-rate", type=float, default=0.0, help="probability a message raises")
    p.add_argument("--name")
    p.add_argument("--max-partitions", type=int)
    p.add_argument("--sleep-ms", type=int, default=0)
    p.add_argument("--poison-marker", help="payloads containing this are dead-lettered (FAIL)")

    p = sub.add_parser("retry-mover", parents=[common], help="move due retries until SIGTERM")
    p.add_argument("--interval-s", type=float, default=1.0)
    return parser


_COMMANDS: dict[str, Callable[[argparse.Namespace, _Out], int]] = {
    "topic": cmd_topic,
    "produce": cmd_produce,
    "lag": cmd_lag,
    "pending": cmd_pending,
    "leases": cmd_leases,
    "dlq": cmd_dlq,
    "consume": cmd_consume,
    "retry-mover": cmd_retry_mover,
}


def _fail(code: int, message: str) -> int:
    line = " ".join(str(message).split())
    print(f"mqcore: error: {line}", file=sys.stderr)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code (0 ok, 1 Redis unreachable/failed, 2 bad input)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        return _COMMANDS[args.command](args, _Out(args.json))
    except UsageError as exc:
        return _fail(EXIT_USAGE, str(exc))
    except ConnectionLostError as exc:
        return _fail(EXIT_FAILURE, str(exc))
    except MQError as exc:
        from mqcore.errors import FencedError, LeaseLostError

        code = EXIT_FAILURE if isinstance(exc, FencedError | LeaseLostError) else EXIT_USAGE
        if type(exc) is MQError:
            code = EXIT_FAILURE
        return _fail(code, str(exc))
    except ValueError as exc:
        return _fail(EXIT_USAGE, str(exc))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # the CLI never shows a traceback
        return _fail(EXIT_FAILURE, f"{type(exc).__name__}: {exc}")


if __name__ == "__main__":
    sys.exit(main())
