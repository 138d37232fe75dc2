"""The demo workload: topics, producers, and the plan of consumer processes.

``python -m scripts.demo_workload setup`` creates the demo topics (idempotent);
``python -m scripts.demo_workload produce TOPIC --rate R`` produces fake traffic
through :class:`mqcore.producer.Producer` until SIGTERM. The demo (``scripts/demo.py``) gets
the consumer/retry-mover/pipeline process specs from :func:`workload_plan` and
runs them under :mod:`scripts.supervisor`. Everything talks only to
``$MQ_REDIS_URL`` (the Redis the demo started).

Orders payloads are ``{"customer": str, "amount": int}`` (the Spark example
pipeline sums them per customer). A share of every topic's messages carries the
poison marker: consumers started with ``--poison-marker`` fail on them every
time, so they go through the retries into the DLQ.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import signal
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from scripts.demo_settings import PYTHON, DemoSettings
from scripts.supervisor import ProcessSpec

# topic -> (partitions, consumer group)
TOPICS: dict[str, tuple[int, str]] = {
    "orders": (8, "billing"),
    "payments": (4, "ledger"),
    "emails": (4, "mailer"),
}
CUSTOMERS = [f"customer-{i:03d}" for i in range(40)]
TEMPLATES = ["welcome", "receipt", "shipping", "password-reset", "newsletter"]
METHODS = ["card", "sepa", "paypal", "invoice"]


# --------------------------------------------------------------------------- payloads


def make_payload(topic: str, rng: random.Random, *, poison: bool, marker: str) -> dict[str, Any]:
    if topic == "orders":
        body: dict[str, Any] = {
            "customer": rng.choice(CUSTOMERS),
            "amount": rng.randint(1, 500),
        }
    elif topic == "payments":
        body = {
            "payment": uuid.UUID(int=rng.getrandbits(128)).hex[:16],
            "amount_cents": rng.randint(100, 50_000),
            "method": rng.choice(METHODS),
        }
    else:
        body = {
            "to": f"{rng.choice(CUSTOMERS)}@example.com",
            "template": rng.choice(TEMPLATES),
        }
    if poison:
        body["note"] = f"{marker}: this message always fails its consumer"
    return body


def rate_at(base_rate: float, elapsed_s: float, *, swing: float) -> float:
    """Messages per second at ``elapsed_s``: a slow wave around ``base_rate`` (lag gets a shape)."""
    return max(0.1, base_rate * (1.0 + swing * math.sin(2 * math.pi * elapsed_s / 300.0)))


# --------------------------------------------------------------------------- commands


def _config() -> Any:
    from mqcore.config import MQConfig

    url = os.environ.get("MQ_REDIS_URL")
    if not url:
        raise SystemExit("MQ_REDIS_URL is not set (the demo supervisor sets it)")
    return MQConfig.from_url(url)


def setup() -> None:
    from mqcore.topics import Topics

    topics = Topics(_config())
    for name, (partitions, group) in TOPICS.items():
        info = topics.create(name, partitions, groups=(group,))
        print(f"topic {name}: {getattr(info, 'partitions', partitions)} partitions, group {group}")


def produce(
    topic: str,
    *,
    rate: float,
    poison_share: float,
    marker: str,
    seed: int | None,
    report_every_s: float = 300.0,
) -> None:
    from mqcore.producer import Producer

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    rng = random.Random(seed)
    producer = Producer(_config())
    swing = 0.6 if topic == "orders" else 0.2
    started = time.monotonic()
    sent = poisoned = 0
    last_report = started
    while not stop.is_set():
        poison = rng.random() < poison_share
        body = make_payload(topic, rng, poison=poison, marker=marker)
        key = body.get("customer") or body.get("payment") or body.get("to")
        producer.send(
            topic,
            json.dumps(body),
            key=str(key),
            headers={"source": "demo", "content-type": "application/json"},
        )
        sent += 1
        poisoned += poison
        now = time.monotonic()
        if now - last_report >= report_every_s:
            print(f"{topic}: sent {sent} messages ({poisoned} poison) in {now - started:.0f}s")
            last_report = now
        stop.wait(1.0 / rate_at(rate, now - started, swing=swing))
    print(f"{topic}: stopped after {sent} messages")


# --------------------------------------------------------------------------- process plan


@dataclass
class WorkloadPlan:
    """Specs the supervisor runs: ``always`` stay up; ``bounce`` crashes and comes back;
    ``churn`` joins and leaves; ``pipeline`` is the Spark job (optional)."""

    always: list[ProcessSpec]
    bounce: ProcessSpec
    churn: ProcessSpec
    pipeline: Callable[[Callable[..., list[str]]], ProcessSpec] = field(repr=False)


def workload_plan(settings: DemoSettings, *, poison_marker: str) -> WorkloadPlan:
    def producer(topic: str, rate: float) -> ProcessSpec:
        argv = [PYTHON, "-m", "scripts.demo_workload", "produce", topic, f"--rate={rate}"]
        argv += [f"--poison-share={settings.poison_share}", f"--poison-marker={poison_marker}"]
        argv += [f"--report-every-s={settings.report_every_s}"]
        return ProcessSpec(f"produce-{topic}", argv)

    def consumer(topic: str, name: str, *extra: str) -> ProcessSpec:
        group = TOPICS[topic][1]
        argv = [PYTHON, "-m", "mqcore", "consume", topic, "--group", group, "--name", name]
        argv += [f"--fail-rate={settings.fail_rate}", f"--poison-marker={poison_marker}", *extra]
        return ProcessSpec(name, argv)

    always = [
        consumer("orders", "orders-a"),
        consumer("orders", "orders-b"),
        consumer("payments", "payments-a"),
        consumer("payments", "payments-slow", f"--sleep-ms={settings.slow_sleep_ms}"),
        consumer("emails", "emails-a", "--max-partitions=2"),
        consumer("emails", "emails-b"),
        ProcessSpec("retry-mover", [PYTHON, "-m", "mqcore", "retry-mover"]),
        producer("orders", settings.orders_rate),
        producer("payments", settings.payments_rate),
        producer("emails", settings.emails_rate),
    ]

    def pipeline(manage: Callable[..., list[str]]) -> ProcessSpec:
        return ProcessSpec(
            "pipeline",
            manage("run_pipeline", "order_totals", "--sink", "redis"),
            restart="always",
        )

    return WorkloadPlan(
        always=always,
        bounce=consumer("orders", "orders-bounce"),
        churn=consumer("emails", "emails-churn"),
        pipeline=pipeline,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.demo_workload", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("setup", help="create the demo topics and groups (idempotent)")
    prod = sub.add_parser("produce", help="produce demo traffic to one topic until SIGTERM")
    prod.add_argument("topic", choices=sorted(TOPICS))
    prod.add_argument("--rate", type=float, default=5.0, help="messages per second (average)")
    prod.add_argument("--poison-share", type=float, default=0.01)
    prod.add_argument("--poison-marker", default="POISON-PILL")
    prod.add_argument("--seed", type=int, default=None)
    prod.add_argument("--report-every-s", type=float, default=300.0, help="progress line period")
    args = parser.parse_args(argv)
    if args.command == "setup":
        setup()
    else:
        if args.rate <= 0:
            parser.error("--rate must be positive")
        produce(
            args.topic,
            rate=args.rate,
            poison_share=args.poison_share,
            marker=args.poison_marker,
            seed=args.seed,
            report_every_s=max(1.0, args.report_every_s),
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
