"""A consumer process for the fault tests: ``python -m tests.faults.worker --url ... --sink ...``.

The handler parses ``{"producer": ..., "seq": ...}`` payloads and records each
one in a Redis list (the sink) through a fenced script: the write only happens
while the epoch the consumer holds is still the partition's current epoch, so a
zombie's late side effect is refused (R3). Crash points (R1) kill the process
with SIGKILL from inside: after read (before the side effect), after the side
effect (before the ack), after an ack. Prints ``READY <name>`` once started and
``STATS {...}`` on a clean exit.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import logging
import os
import signal
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict

from mqcore.config import MQConfig
from mqcore.consumer import Consumer, ConsumerOptions, Outcome
from mqcore.errors import FencedError
from mqcore.models import Message
from mqcore.retry import RetryPolicy

# KEYS[1] = fencing epoch key, KEYS[2] = sink list; ARGV[1] = epoch held, ARGV[2] = record
FENCED_SINK = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
return redis.call('RPUSH', KEYS[2], ARGV[2])
"""


def record(producer: str, seq: int, partition: int, entry_id: str, epoch: int, name: str) -> str:
    return json.dumps(
        {
            "producer": producer,
            "seq": seq,
            "partition": partition,
            "id": entry_id,
            "epoch": epoch,
            "consumer": name,
        }
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--group", default="default-group")
    parser.add_argument("--sink", required=True)
    parser.add_argument("--ttl-ms", type=int, default=1500)
    parser.add_argument("--renew-ms", type=int, default=300)
    parser.add_argument("--rebalance-ms", type=int, default=300)
    parser.add_argument("--block-ms", type=int, default=200)
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--ack-batch", type=int, default=10)
    parser.add_argument("--claim-idle-ms", type=int, default=2000)
    parser.add_argument("--reclaim-ms", type=int, default=500)
    parser.add_argument("--socket-timeout", type=float, default=1.0)
    parser.add_argument("--max-partitions", type=int, default=None)
    parser.add_argument("--handle-ms", type=float, default=0.0)
    parser.add_argument("--poison", default="")
    parser.add_argument("--max-retries", type=int, default=2)
    parser.add_argument("--crash-at", choices=["after_read", "after_side_effect", "after_ack"])
    parser.add_argument("--crash-after", type=int, default=5)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    faulthandler.register(signal.SIGUSR1)  # dump every thread's stack when a test is stuck

    config = MQConfig.from_url(
        args.url, socket_timeout=args.socket_timeout, connect_timeout=args.socket_timeout
    )
    options = ConsumerOptions(
        group=args.group,
        max_partitions=args.max_partitions,
        lease_ttl_ms=args.ttl_ms,
        renew_interval_ms=args.renew_ms,
        rebalance_interval_ms=args.rebalance_ms,
        batch_size=args.batch,
        block_ms=args.block_ms,
        claim_idle_ms=args.claim_idle_ms,
        reclaim_interval_ms=args.reclaim_ms,
        ack_batch=args.ack_batch,
        retry_policy=RetryPolicy(max_retries=args.max_retries, base_ms=10, max_ms=20, jitter=0.0),
    )
    sink_client = config.client()
    sink = sink_client.register_script(FENCED_SINK)
    handled = 0
    acked = 0
    consumer: Consumer

    def crash(point: str, count: int) -> None:
        if args.crash_at == point and count >= args.crash_after:
            os.kill(os.getpid(), signal.SIGKILL)

    def handler(message: Message) -> Outcome | None:
        nonlocal handled
        handled += 1
        crash("after_read", handled)
        if args.poison and args.poison in message.payload:
            raise ValueError(f"poison message {message.id}")
        # the fencing token is taken when work starts, as a real side effect would
        epoch = consumer.current_epoch(message.partition)
        if epoch is None:
            raise FencedError(f"no lease for p{message.partition}")
        if args.handle_ms:
            # tests that freeze a worker mid-handler wait for this marker
            sink_client.set(f"{args.sink}:handling", message.id)
            time.sleep(args.handle_ms / 1000)
        body = json.loads(message.payload)
        done = sink(
            keys=[config.keys.lease_epoch(args.topic, args.group, message.partition), args.sink],
            args=[epoch, record(body["producer"], body["seq"], message.partition, message.id,
                                epoch, consumer.name)],
        )  # fmt: skip
        if int(done) < 0:
            raise FencedError(f"sink refused stale epoch {epoch}")
        crash("after_side_effect", handled)
        return Outcome.SUCCESS

    def on_ack(partition: int, ids: Sequence[str]) -> None:
        nonlocal acked
        acked += len(ids)
        crash("after_ack", acked)

    consumer = Consumer(config, args.topic, handler, options)
    consumer.on_ack = on_ack
    consumer.install_signal_handlers()
    print(f"READY {consumer.name}", flush=True)
    consumer.run()
    print("STATS " + json.dumps(asdict(consumer.stats)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
