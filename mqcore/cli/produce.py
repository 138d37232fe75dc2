"""``mqcore produce``: send one message."""

from __future__ import annotations

import argparse

from mqcore.cli.common import AddParser, Out, Parser, config

__all__ = ["add_parsers", "cmd_produce"]


def add_parsers(add: AddParser, common: Parser) -> None:
    p = add("produce", parents=[common], help="send one message")
    p.add_argument("topic")
    p.add_argument("--payload", required=True)
    p.add_argument("--key")
    p.add_argument("--header", action="append", metavar="NAME=VALUE")
    p.add_argument("--partition", type=int)


def cmd_produce(args: argparse.Namespace, out: Out) -> int:
    from mqcore.producer import Producer, parse_header_assignment

    headers = dict(parse_header_assignment(h) for h in args.header or [])
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
