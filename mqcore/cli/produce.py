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
    p.add_argument(
        "--wait-replicas",
        type=int,
        default=0,
        metavar="N",
        help="succeed only once N replicas have the message (WAIT; exit 1 if they do not)",
    )


def cmd_produce(args: argparse.Namespace, out: Out) -> int:
    from mqcore.producer import Producer, parse_header_assignment

    headers = dict(parse_header_assignment(h) for h in args.header or [])
    with Producer(config(args), wait_replicas=args.wait_replicas) as producer:
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
