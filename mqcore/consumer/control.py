"""The consumer and its control loop: heartbeat, lease renewal, rebalancing, shutdown.

A control thread heartbeats, renews the leases of the owned partitions, and
rebalances: it takes free partitions up to its fair share (and
``max_partitions``) and releases the extras, one :class:`PartitionWorker` per
owned partition. It also moves due retries back to their partitions every
``retry_move_interval_ms``. ``stop()`` or SIGTERM stops every worker
gracefully (see :mod:`.worker`) and removes the heartbeat.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
import uuid
from collections.abc import Callable, Sequence

import redis

from mqcore.acks import load_ack_script
from mqcore.boundary import translate
from mqcore.config import MQConfig, RedisClient
from mqcore.consumer.membership import (
    fair_share,
    live_consumers,
    remove_heartbeat,
    write_heartbeat,
)
from mqcore.consumer.options import ConsumerOptions, ConsumerStats, Handler
from mqcore.consumer.worker import PartitionWorker
from mqcore.errors import ConnectionLostError, InvalidArgumentError, MQError
from mqcore.keys import validate_name
from mqcore.leases import Lease, LeaseManager
from mqcore.metrics import Metrics
from mqcore.retry import RetryMover
from mqcore.topics import Topics

__all__ = ["Consumer"]

log = logging.getLogger("mqcore.consumer")


def _default_name() -> str:
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def _check(topic: str, o: ConsumerOptions) -> None:
    try:
        validate_name("topic", topic)
        validate_name("group", o.group)
    except ValueError as exc:
        raise InvalidArgumentError(str(exc)) from None
    for name in ("lease_ttl_ms", "renew_interval_ms", "rebalance_interval_ms", "batch_size"):
        if getattr(o, name) <= 0:
            raise InvalidArgumentError(f"{name} must be > 0")
    if o.renew_interval_ms * 2 > o.lease_ttl_ms:
        raise InvalidArgumentError("renew_interval_ms must be at most half of lease_ttl_ms")
    if o.max_partitions is not None and o.max_partitions < 1:
        raise InvalidArgumentError("max_partitions must be >= 1")
    if o.ack_batch < 1:
        raise InvalidArgumentError("ack_batch must be >= 1")


class Consumer:
    """Consume one topic in a consumer group with leases, fencing and retries."""

    def __init__(
        self,
        config: MQConfig,
        topic: str,
        handler: Handler,
        options: ConsumerOptions | None = None,
        *,
        metrics: Metrics | None = None,
    ) -> None:
        self.options = options or ConsumerOptions()
        o = self.options
        _check(topic, o)
        self.config = config
        self.encoding = config.encoding
        self.topic = topic
        self.group = o.group
        self.handler = handler
        self.metrics = metrics
        self.name = o.name or _default_name()
        self.keys = config.keys
        self.client: RedisClient = config.client()
        self.topics = Topics(config, self.client)
        self.mover = RetryMover(config, self.client)
        self.leases = LeaseManager(
            self.client,
            self.keys,
            topic=topic,
            group=o.group,
            owner=self.name,
            ttl_ms=o.lease_ttl_ms,
        )
        # a BLOCK longer than the socket timeout would look like a dead connection
        self.block_ms = max(1, min(o.block_ms, int(config.socket_timeout * 1000 / 2)))
        self.stats = ConsumerStats()
        self.on_ack: Callable[[int, Sequence[str]], None] | None = None
        self._workers: dict[int, PartitionWorker] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._partitions = 0

    # --- public API ---------------------------------------------------------
    def owned_partitions(self) -> list[int]:
        with self._lock:
            return sorted(p for p, w in self._workers.items() if w.lease_valid())

    def current_epoch(self, partition: int) -> int | None:
        """The fencing epoch this consumer holds for ``partition`` (for fenced side effects)."""
        with self._lock:
            worker = self._workers.get(partition)
        if worker is None or not worker.lease_valid():
            return None
        return worker.lease.epoch

    def start(self) -> None:
        """Run in a background thread; ``stop()`` ends it."""
        if self._thread is not None:
            raise MQError("consumer already started")
        self._thread = threading.Thread(target=self.run, name=f"mq-consumer-{self.name}")
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        """Graceful stop: finish the message in hand, flush acks, release leases."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def install_signal_handlers(self) -> None:
        """SIGTERM / SIGINT -> graceful stop (call from the main thread)."""

        def _on_signal(signum: int, _frame: object) -> None:
            log.info("signal %d: stopping consumer %s", signum, self.name)
            self._stop.set()

        signal.signal(signal.SIGTERM, _on_signal)
        signal.signal(signal.SIGINT, _on_signal)

    def run(self, stop: threading.Event | None = None) -> None:
        """Consume until ``stop`` (or ``self.stop()``/a signal); returns after shutdown."""
        o = self.options

        def stopped() -> bool:
            return self._stop.is_set() or (stop is not None and stop.is_set())

        load_ack_script(self.client)
        self._partitions = self.topics.partition_count(self.topic)
        self.topics.ensure_group(self.topic, self.group, start_id=o.start_id)
        next_renew = next_rebalance = next_move = 0.0
        move_every = o.retry_move_interval_ms / 1000
        try:
            while not stopped():
                now = time.monotonic()
                try:
                    if now >= next_renew:
                        next_renew = now + o.renew_interval_ms / 1000
                        self._renew()
                        self._heartbeat()
                    if now >= next_rebalance:
                        next_rebalance = now + o.rebalance_interval_ms / 1000
                        self._rebalance()
                        self._heartbeat()
                    if move_every > 0 and now >= next_move:
                        next_move = now + move_every
                        self.mover.move_due(self.topic)
                except MQError as exc:
                    self.stats.add(errors=1)
                    log.warning("consumer %s control loop: %s", self.name, exc)
                took_ms = (time.monotonic() - now) * 1000
                if took_ms > o.renew_interval_ms:
                    log.warning("control loop pass took %.0f ms (renew every %d ms)", took_ms,
                                o.renew_interval_ms)  # fmt: skip
                soonest = min(
                    next_renew, next_rebalance, next_move if move_every > 0 else next_renew
                )
                wait = max(0.0, soonest - time.monotonic())
                self._stop.wait(min(wait, 0.1) if stop else wait)
        finally:
            self._shutdown()

    # --- control loop -------------------------------------------------------
    def _renew(self) -> None:
        with self._lock:
            workers = list(self._workers.values())
        for worker in workers:
            if worker.lost:
                continue
            started = time.monotonic()
            try:
                ok = self.leases.renew(worker.lease)
            except ConnectionLostError as exc:
                self.stats.add(errors=1)
                log.warning("p%d lease renew failed: %s", worker.partition, exc)
                continue
            if ok:
                worker.deadline = started + self.options.lease_ttl_ms / 1000
            else:
                log.warning("p%d lease lost (renew refused)", worker.partition)
                worker.lose()

    def _heartbeat(self) -> None:
        write_heartbeat(
            self.client,
            self.keys.consumers(self.topic, self.group),
            self.name,
            partitions=self.owned_partitions(),
            max_partitions=self.options.max_partitions,
        )

    def _rebalance(self) -> None:
        self._partitions = self.topics.partition_count(self.topic)
        total = self._partitions
        live = live_consumers(
            self.client,
            self.keys.consumers(self.topic, self.group),
            self.name,
            lease_ttl_ms=self.options.lease_ttl_ms,
        )
        cap = fair_share(total, live, self.options.max_partitions)
        with self._lock:
            owned = sorted(p for p, w in self._workers.items() if not w.stopping.is_set())
        if len(owned) > cap:
            for partition in owned[cap:]:
                log.info("p%d released to rebalance (share %d)", partition, cap)
                with self._lock:
                    worker = self._workers.get(partition)
                if worker is not None:
                    worker.request_stop(release=True)
            return
        wanted = cap - len(owned)
        if wanted <= 0:
            return
        with self._lock:
            busy = set(self._workers)
        candidates = [p for p in range(total) if p not in busy]
        if not candidates:
            return
        try:
            pipe = self.client.pipeline(transaction=False)
            for p in candidates:
                pipe.pttl(self.keys.lease(self.topic, self.group, p))
            ttls = pipe.execute()
        except redis.RedisError as exc:
            raise translate(exc, "lease scan") from exc
        # -2: free; -1: held without a TTL (a Java holder that died between SETNX and
        # EXPIRE): acquire gives it one, so the partition frees up instead of starving
        for p, ttl in zip(candidates, ttls, strict=True):
            if ttl == -1 and wanted > 0:
                taken = self.leases.acquire(p)  # None: repaired, still the other's for a TTL
                if taken is not None:  # it expired in between: ours now
                    self._start_worker(taken)
                    wanted -= 1
        free = [p for p, ttl in zip(candidates, ttls, strict=True) if ttl == -2]
        offset = sum(self.name.encode()) % len(free) if free else 0
        for p in free[offset:] + free[:offset]:
            if wanted <= 0 or self._stop.is_set():
                break
            lease = self.leases.acquire(p)
            if lease is None:
                continue
            self._start_worker(lease)
            wanted -= 1

    def _start_worker(self, lease: Lease) -> None:
        log.info("p%d acquired (epoch %d)", lease.partition, lease.epoch)
        worker = PartitionWorker(self, lease, on_exit=self._worker_exited)
        with self._lock:
            self._workers[lease.partition] = worker
        worker.start()

    def _worker_exited(self, worker: PartitionWorker) -> None:
        with self._lock:
            if self._workers.get(worker.partition) is worker:
                del self._workers[worker.partition]

    def _shutdown(self) -> None:
        with self._lock:
            workers = list(self._workers.values())
        for worker in workers:
            worker.request_stop(release=True)
        for worker in workers:
            worker.join(self.options.lease_ttl_ms / 1000 + self.config.socket_timeout)
        remove_heartbeat(self.client, self.keys.consumers(self.topic, self.group), self.name)
        log.info("consumer %s stopped: %s", self.name, self.stats)
