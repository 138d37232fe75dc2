"""What a partition worker uses of its consumer, and the reports it sends back.

Workers see the consumer only through :class:`WorkerHost`, so the worker and
message handling modules do not depend on the control loop that starts them.
Metrics updates never break consumption: a failing metrics backend is logged
at debug level and ignored.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Protocol

from mqcore.config import RedisClient
from mqcore.consumer.options import ConsumerOptions, ConsumerStats, Handler
from mqcore.keys import KeySpace
from mqcore.leases import LeaseManager
from mqcore.metrics import Metrics

__all__ = ["WorkerHost", "report_acked", "report_count", "report_latency"]

log = logging.getLogger("mqcore.consumer")


class WorkerHost(Protocol):
    """The consumer as its partition workers see it."""

    topic: str
    group: str
    name: str  # this consumer's name in the group
    keys: KeySpace
    client: RedisClient
    options: ConsumerOptions
    encoding: str  # MQConfig.encoding: how acks write the commit frontier
    block_ms: int  # XREADGROUP BLOCK, kept below the socket timeout
    stats: ConsumerStats
    leases: LeaseManager
    handler: Handler
    metrics: Metrics | None
    on_ack: Callable[[int, Sequence[str]], None] | None  # called after each acked batch


def report_count(host: WorkerHost, what: str, partition: int, amount: int = 1) -> None:
    if host.metrics is None:
        return
    try:
        host.metrics.inc(what, host.topic, partition, amount)
    except Exception:  # metrics must never break consumption
        log.debug("metrics update failed", exc_info=True)


def report_latency(host: WorkerHost, partition: int, latency_ms: float) -> None:
    """One handled message: counted as consumed, its handler latency observed."""
    if host.metrics is None:
        return
    try:
        host.metrics.inc("consumed", host.topic, partition, 1)
        host.metrics.observe_handle_latency(host.topic, partition, latency_ms)
    except Exception:
        log.debug("metrics update failed", exc_info=True)


def report_acked(host: WorkerHost, partition: int, ids: Sequence[str]) -> None:
    report_count(host, "acked", partition, len(ids))
    if host.on_ack is not None:
        host.on_ack(partition, ids)
