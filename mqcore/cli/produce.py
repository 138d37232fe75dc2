"""``mqcore produce``: send one message."""

from __future__ import annotations

import argparse

from mqcore.cli.common import AddParser, Out, Parser, UsageError, config

__all__ = ["add_parsers", "cmd_produce"]


def add_parsers(add: AddParser, common: Parser) -> None:
    p = add("produce", parents=[common], help="send one message")
    p.add_argument("topic")
    p.add_argument("--payload", required=True)
    p.add_argument("--key")
    p.add_argument("--header", action="append", metavar="NAME=VALUE")
    p.add_argument("--partition", type=int)


def _header(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise UsageError(f"--header takes NAME=VALUE, got {text!r}")
    return name, value


def cmd_produce(args: argparse.Namespace, out: Out) -> int:
    from mqcore.producer import Producer

    headers = dict(_header(h) for h in args.header or [])
    with Producer(config(args)) as producer:
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
