"""``mqcore consume`` and ``retry-mover``: processes that run until SIGTERM."""

from __future__ import annotations

import argparse
import random
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

from mqcore.acks import ACK_POLICIES
from mqcore.cli.common import AddParser, Out, Parser, UsageError, config
from mqcore.models import Message

__all__ = ["add_parsers", "cmd_consume", "cmd_retry_mover", "demo_handler"]


def add_parsers(add: AddParser, common: Parser) -> None:
    p = add("consume", parents=[common], help="run a demo consumer until SIGTERM")
    p.add_argument("topic")
    p.add_argument("--group", required=True)
    p.add_argument("--fail-rate", type=float, default=0.0, help="probability a message raises")
    p.add_argument("--name")
    p.add_argument("--max-partitions", type=int)
    p.add_argument("--sleep-ms", type=int, default=0)
    p.add_argument("--poison-marker", help="payloads containing this are dead-lettered (FAIL)")
    p.add_argument(
        "--ack-delete-policy", choices=ACK_POLICIES, default="none",
        help="Java's ackDeletePolicy: keep acked entries, or (immediate, all-groups-ack) XDEL "
        "each once no group on the stream still needs it",
    )  # fmt: skip

    p = add("retry-mover", parents=[common], help="move due retries until SIGTERM")
    p.add_argument("--interval-s", type=float, default=1.0)


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


def cmd_consume(args: argparse.Namespace, out: Out) -> int:
    from mqcore.consumer import Consumer, ConsumerOptions

    if not 0.0 <= args.fail_rate <= 1.0:
        raise UsageError("--fail-rate must be between 0 and 1")
    if args.sleep_ms < 0:
        raise UsageError("--sleep-ms must be >= 0")
    options = ConsumerOptions(
        group=args.group,
        name=args.name,
        max_partitions=args.max_partitions,
        ack_delete_policy=args.ack_delete_policy,
    )
    handler = demo_handler(args.fail_rate, args.poison_marker, args.sleep_ms, random.Random())
    consumer = Consumer(config(args), args.topic, handler, options)
    consumer.install_signal_handlers()
    consumer.run()
    stats = {k: v for k, v in vars(consumer.stats).items() if not k.startswith("_")}
    data = {"consumer": consumer.name, "topic": args.topic, "group": args.group, **stats}
    out.emit(data, lambda d: " ".join(f"{k}={v}" for k, v in d.items()))
    return 0


def cmd_retry_mover(args: argparse.Namespace, out: Out) -> int:
    from mqcore.retry import RetryMover

    if args.interval_s <= 0:
        raise UsageError("--interval-s must be > 0")
    mover = RetryMover(config(args))
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    mover.run(stop, args.interval_s)
    out.emit({"stopped": True}, lambda d: "retry mover stopped")
    return 0
