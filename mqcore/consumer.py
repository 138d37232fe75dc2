"""The consumer: partition leases, one serial worker per owned partition, fenced acks.

How it works (RELIABILITY R1-R6, R10, R11):

- A control thread heartbeats (``keys.consumers``), renews leases, and rebalances:
  with N live consumers (heartbeat fresher than the lease TTL) each takes at most
  ``ceil(P / N)`` partitions (and ``max_partitions``); extras are released.
- Each owned partition has one worker thread: on takeover it claims every entry
  still pending in the group (the previous owner is gone, released, or fenced),
  then reads new entries with XREADGROUP, hands them to the handler in order and
  acks in batches through the fenced ack script, pipelined with the next read.
  Every ``reclaim_interval_ms`` it also claims orphans idle > ``claim_idle_ms``
  with XAUTOCLAIM (cursor loop, COUNT <= 100); ids deleted while pending are
  counted as lost by retention, logged and acked, never handed to the handler.
- Handler outcome: SUCCESS (or None) acks; RETRY or an exception schedules the
  next attempt (ack + retry item in one script) until ``retryCount >=
  maxRetries``, then dead-letters; FAIL dead-letters at once (ack + DLQ in one
  script). So a message with ``maxRetries=N`` is handled N+1 times (Java).
- A worker stops touching its partition when its lease could not be renewed in
  time (local deadline = renew start + TTL - margin), so a partitioned consumer
  stops before a peer can take over. A zombie that wakes up late is refused by
  the epoch check in every write script (:class:`FencedError`) and drops its
  in-flight work.
- ``stop()`` / SIGTERM: workers finish the message in hand, flush acks and
  release their leases; unhandled entries stay pending for the next owner.
"""

from __future__ import annotations

import json
import logging
import math
import os
import signal
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

import redis

from mqcore.acks import (
    ack,
    ack_args,
    dead_letter,
    schedule_retry,
    translate_redis_error,
)
from mqcore.codec import parse_headers
from mqcore.config import MQConfig, RedisClient
from mqcore.errors import (
    ConnectionLostError,
    FencedError,
    InvalidArgumentError,
    MQError,
    UnknownMessageError,
)
from mqcore.keys import validate_name
from mqcore.leases import Lease, LeaseManager
from mqcore.metrics import Metrics
from mqcore.models import Message
from mqcore.payloads import PAYLOAD_HASH_REF, is_out_of_line, load_payload
from mqcore.retry import RetryMover, RetryPolicy
from mqcore.scripts import call_script, lua_source
from mqcore.topics import Topics

__all__ = [
    "Consumer",
    "ConsumerOptions",
    "ConsumerStats",
    "Handler",
    "Outcome",
    "decode_message",
]

log = logging.getLogger("mqcore.consumer")

DIRECT_RETRY_MS = 50  # Java: delays this short are re-added to the partition at once
RECLAIM_COUNT = 100
_HEARTBEAT_PRUNE_MS = 60_000


class Outcome(StrEnum):
    SUCCESS = "success"  # handled: ack
    RETRY = "retry"  # try again later (backoff), dead-letter after maxRetries
    FAIL = "fail"  # dead-letter now


Handler = Callable[[Message], Outcome | None]


@dataclass(frozen=True)
class ConsumerOptions:
    group: str = "default-group"
    name: str | None = None  # default: host-pid-random (unique per process)
    max_partitions: int | None = None
    lease_ttl_ms: int = 15000
    renew_interval_ms: int = 3000
    rebalance_interval_ms: int = 5000
    batch_size: int = 100
    block_ms: int = 1000
    claim_idle_ms: int = 300000
    reclaim_interval_ms: int = 30000
    ack_batch: int = 100
    retry_policy: RetryPolicy = field(default_factory=RetryPolicy)
    start_id: str = "0"
    ack_delete: bool = False  # XDEL after ack (Java ack-delete policy ``immediate``)
    retry_move_interval_ms: int = 1000  # run the retry mover this often (0: never, as Java 1 s)


@dataclass
class ConsumerStats:
    processed: int = 0  # handler calls
    acked: int = 0
    retried: int = 0
    dead: int = 0
    fenced: int = 0  # writes refused because another consumer took the partition over
    lost_by_retention: int = 0  # pending ids trimmed/deleted before they were handled
    reclaimed: int = 0  # entries claimed from other consumers (takeover or idle orphans)
    errors: int = 0  # Redis errors seen by workers and the control loop

    def __post_init__(self) -> None:
        self._lock = threading.Lock()

    def add(self, **counts: int) -> None:
        with self._lock:
            for name, value in counts.items():
                setattr(self, name, getattr(self, name) + value)


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def _int(value: str | None, default: int) -> int:
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        return default


def _stored_fields(message: Message) -> dict[str, str | bytes]:
    """The entry's fields as stored (a payload that is not UTF-8 as its original bytes)."""
    fields: dict[str, str | bytes] = dict(message.fields)
    if message.payload_bytes is not None:
        fields["payload"] = message.payload_bytes
    return fields


def decode_message(
    topic: str,
    partition: int,
    entry_id: str,
    raw: Mapping[bytes | str, bytes | str],
    *,
    default_max_retries: int = 3,
) -> Message:
    """A :class:`Message` from a stream entry's raw fields, decoded leniently.

    Bad UTF-8 in the payload keeps the bytes in ``payload_bytes``; headers that
    are not a JSON object read as empty; numbers that do not parse take defaults.
    """
    fields: dict[str, str] = {}
    payload_raw: bytes | str = b""
    for k, v in raw.items():
        name = k.decode("utf-8", errors="replace") if isinstance(k, bytes) else k
        if name == "payload":
            payload_raw = v
        fields[name] = v.decode("utf-8", errors="replace") if isinstance(v, bytes) else v
    payload_bytes: bytes | None = None
    if isinstance(payload_raw, bytes):
        try:
            payload = payload_raw.decode("utf-8")
        except UnicodeDecodeError:
            payload = fields["payload"]
            payload_bytes = payload_raw
    else:
        payload = payload_raw
    headers = parse_headers(fields.get("headers"))
    key = fields.get("key")
    return Message(
        topic=topic,
        partition=partition,
        id=entry_id,
        payload=payload,
        payload_bytes=payload_bytes,
        key=key if key else None,
        headers=headers,
        timestamp=fields.get("timestamp", ""),
        retry_count=_int(fields.get("retryCount"), 0),
        max_retries=_int(fields.get("maxRetries"), default_max_retries),
        fields=fields,
    )


def _default_name() -> str:
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


class _Worker(threading.Thread):
    """Serial processing of one owned partition."""

    def __init__(self, consumer: Consumer, lease: Lease) -> None:
        super().__init__(name=f"mq-{consumer.topic}-p{lease.partition}", daemon=True)
        self.consumer = consumer
        self.lease = lease
        self.partition = lease.partition
        self.stream = consumer.keys.partition(consumer.topic, lease.partition)
        ttl_s = consumer.options.lease_ttl_ms / 1000
        # Stop a little before the TTL so a peer cannot take over while we still work.
        self.margin_s = min(ttl_s / 5, 2.0)
        self.deadline = time.monotonic() + ttl_s
        self.stopping = threading.Event()
        self.release_on_exit = True
        self.acks: list[str] = []
        self.lost = False
        self.backlog = False  # True: our own PEL holds entries to handle before new ones

    # --- lease state --------------------------------------------------------
    def lease_valid(self) -> bool:
        return not self.lost and time.monotonic() < self.deadline - self.margin_s

    def request_stop(self, *, release: bool) -> None:
        self.release_on_exit = self.release_on_exit and release
        self.stopping.set()

    def lose(self) -> None:
        """The lease is gone (renew refused or fenced): stop at once, keep nothing."""
        self.lost = True
        self.release_on_exit = False
        self.stopping.set()

    # --- main loop ----------------------------------------------------------
    def run(self) -> None:
        c = self.consumer
        # first pass on takeover: everything pending (the previous owner is gone or fenced)
        reclaim_idle_ms, next_reclaim = 0, 0.0
        try:
            while not self.stopping.is_set() and self.lease_valid():
                try:
                    if time.monotonic() >= next_reclaim:
                        self._reclaim(min_idle_ms=reclaim_idle_ms)
                        reclaim_idle_ms = c.options.claim_idle_ms
                        next_reclaim = time.monotonic() + c.options.reclaim_interval_ms / 1000
                        continue
                    self._handle_all(self._read())
                except ConnectionLostError as exc:
                    # entries in hand stay pending under our name: re-read them in order
                    c.stats.add(errors=1)
                    log.warning("p%d: Redis call failed: %s", self.partition, exc)
                    self.backlog = True
                    self.stopping.wait(0.2)
            if not self.stopping.is_set() and not self.lost:
                log.warning("p%d: lease not renewed in time, stopping work", self.partition)
            self._flush_acks()
        except FencedError as exc:
            self._fenced(exc)
        except MQError as exc:
            c.stats.add(errors=1)
            log.warning("p%d worker stops: %s", self.partition, exc)
        except Exception:
            c.stats.add(errors=1)
            log.exception("p%d worker crashed", self.partition)
        finally:
            self._exit()

    def _fenced(self, exc: FencedError) -> None:
        self.consumer.stats.add(fenced=1)
        log.warning("p%d fenced, dropping in-flight work: %s", self.partition, exc)
        self.acks.clear()
        self.lose()

    def _exit(self) -> None:
        c = self.consumer
        if self.release_on_exit and not self.lost:
            try:
                c.leases.release(self.lease)
            except MQError as exc:
                log.warning("p%d lease release failed: %s", self.partition, exc)
        c._worker_exited(self)

    def _handle_all(self, entries: Sequence[tuple[Any, Any]]) -> None:
        c = self.consumer
        ack_batch = c.options.ack_batch
        handled = 0
        try:
            for raw_id, raw_fields in entries:
                if self.stopping.is_set() or not self.lease_valid():
                    return
                handled += 1
                self._handle(raw_id.decode() if isinstance(raw_id, bytes) else raw_id, raw_fields)
                if len(self.acks) >= ack_batch:
                    self._flush_acks()
        finally:
            if handled:
                c.stats.add(processed=handled)

    # --- Redis calls --------------------------------------------------------
    def _read(self) -> Sequence[tuple[Any, Any]]:
        """XREADGROUP, pipelined after the pending ack flush (one round trip).

        Reads our own pending entries (id ``0``) while ``backlog`` is set, new
        ones (``>``) otherwise; the ack flush runs first, so acked entries are
        never read back.
        """
        c = self.consumer
        pipe = c.client.pipeline(transaction=False)
        acks = self.acks
        if acks:
            keys, args = ack_args(
                c.keys,
                topic=c.topic,
                group=c.group,
                partition=self.partition,
                ids=acks,
                epoch=self.lease.epoch,
                delete=c.options.ack_delete,
            )
            call_script(c.client, "ack_entries", keys, args, pipe=pipe)
        if self.backlog:
            pipe.xreadgroup(c.group, c.name, {self.stream: "0"}, count=c.options.batch_size)
        else:
            pipe.xreadgroup(
                c.group, c.name, {self.stream: ">"}, count=c.options.batch_size, block=c.block_ms
            )
        try:
            replies = pipe.execute(raise_on_error=False)
        except redis.RedisError as exc:
            raise translate_redis_error(exc, "read") from exc
        if acks:
            self.acks = []
            first = replies[0]
            if isinstance(first, redis.exceptions.NoScriptError):
                self._ack_now(acks)
            elif isinstance(first, Exception):
                self.acks = acks  # keep them for the next flush
                raise translate_redis_error(first, "ack")
            elif int(first) < 0:
                raise FencedError(f"p{self.partition}: epoch {self.lease.epoch} is stale")
            else:
                c.stats.add(acked=len(acks))
                c._acked(self.partition, acks)
        reply = replies[-1]
        if isinstance(reply, Exception):
            raise translate_redis_error(reply, "read")
        entries = list(reply[0][1]) if reply else []
        if self.backlog and not entries:
            self.backlog = False
        return entries

    def _ack_now(self, ids: list[str]) -> None:
        c = self.consumer
        ack(
            c.client,
            c.keys,
            topic=c.topic,
            group=c.group,
            partition=self.partition,
            ids=ids,
            epoch=self.lease.epoch,
            delete=c.options.ack_delete,
        )
        c.stats.add(acked=len(ids))
        c._acked(self.partition, ids)

    def _flush_acks(self) -> None:
        if not self.acks:
            return
        ids, self.acks = self.acks, []
        try:
            self._ack_now(ids)
        except ConnectionLostError:
            self.acks = ids + self.acks
            raise

    def _reclaim(self, *, min_idle_ms: int) -> None:
        """Claim pending entries of the group (cursor loop, COUNT <= 100) and handle them."""
        c = self.consumer
        cursor = "0-0"
        while not self.stopping.is_set() and self.lease_valid():
            try:
                reply = c.client.xautoclaim(
                    self.stream, c.group, c.name, min_idle_ms, cursor, count=RECLAIM_COUNT
                )
            except redis.RedisError as exc:
                raise translate_redis_error(exc, "reclaim") from exc
            cursor = _text(reply[0])
            claimed = reply[1] or []
            deleted = [_text(i) for i in (reply[2] if len(reply) > 2 else [])]
            if deleted:
                c.stats.add(lost_by_retention=len(deleted))
                log.warning(
                    "p%d: %d pending entries were trimmed/deleted before handling "
                    "(lost by retention): %s",
                    self.partition,
                    len(deleted),
                    ", ".join(deleted[:10]),
                )
                # Redis already dropped them from the PEL; the fenced ack makes sure
                ack(
                    c.client,
                    c.keys,
                    topic=c.topic,
                    group=c.group,
                    partition=self.partition,
                    ids=deleted,
                    epoch=self.lease.epoch,
                )
            live = [(i, f) for i, f in claimed if f is not None]
            if live:
                c.stats.add(reclaimed=len(live))
                self._handle_all(live)
                self._flush_acks()
            if cursor in ("0-0", "0"):
                return

    # --- one message --------------------------------------------------------
    def _handle(self, entry_id: str, raw_fields: Mapping[Any, Any] | None) -> None:
        c = self.consumer
        if not raw_fields:
            # read back from our own PEL after a trim: never hand an empty message over
            c.stats.add(lost_by_retention=1)
            log.warning("p%d: entry %s vanished while pending", self.partition, entry_id)
            self.acks.append(entry_id)
            return
        message = decode_message(
            c.topic,
            self.partition,
            entry_id,
            raw_fields,
            default_max_retries=c.options.retry_policy.max_retries,
        )
        if PAYLOAD_HASH_REF in message.headers:
            message = c._resolve_payload(message, raw_fields)
        error: BaseException | None = None
        started = time.perf_counter()
        try:
            outcome = c.handler(message) or Outcome.SUCCESS
        except FencedError:
            raise
        except Exception as exc:
            outcome, error = Outcome.RETRY, exc
        if c.metrics is not None:
            c._observe(self.partition, (time.perf_counter() - started) * 1000)
        if outcome is Outcome.SUCCESS:
            self.acks.append(entry_id)
        elif outcome == Outcome.RETRY and message.retry_count < message.max_retries:
            self._retry(message, error)
        else:
            self._dead_letter(message, error, outcome)

    def _error_text(self, error: BaseException | None, outcome: Outcome) -> tuple[str, str]:
        if error is None:
            return f"handler returned {outcome.value}", ""
        return (str(error) or type(error).__name__)[:1000], type(error).__name__

    def _retry(self, message: Message, error: BaseException | None) -> None:
        c = self.consumer
        attempt = message.retry_count + 1
        delay = int(c.options.retry_policy.delay_ms(attempt))
        fields = _stored_fields(message)
        if error is not None:
            reason, kind = self._error_text(error, Outcome.RETRY)
            headers = dict(message.headers)
            headers["x-runtime-error-message"] = reason
            headers["x-runtime-error-type"] = kind
            fields["headers"] = json.dumps(headers, separators=(",", ":"), ensure_ascii=False)
        try:
            schedule_retry(
                c.client,
                c.keys,
                topic=c.topic,
                group=c.group,
                partition=self.partition,
                entry_id=message.id,
                fields=fields,
                due_ms=int(time.time() * 1000) + delay,
                epoch=self.lease.epoch,
                direct=delay <= DIRECT_RETRY_MS,
                default_max_retries=message.max_retries,
            )
        except UnknownMessageError:
            log.warning("p%d: %s no longer pending, retry skipped", self.partition, message.id)
            return
        c.stats.add(retried=1)
        c._count("retried", self.partition)

    def _dead_letter(self, message: Message, error: BaseException | None, outcome: Outcome) -> None:
        c = self.consumer
        reason, kind = self._error_text(error, outcome)
        raw = _stored_fields(message)
        try:
            dead_letter(
                c.client,
                c.keys,
                topic=c.topic,
                group=c.group,
                partition=self.partition,
                entry_id=message.id,
                reason=reason,
                error_type=kind,
                epoch=self.lease.epoch,
                fields=raw,
            )
        except UnknownMessageError:
            log.warning("p%d: %s no longer pending, not dead-lettered", self.partition, message.id)
            return
        c.stats.add(dead=1)
        c._count("dead", self.partition)


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
        self.config = config
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
        self._workers: dict[int, _Worker] = {}
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

        self._script_load()
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
    def _script_load(self) -> None:
        try:
            self.client.script_load(lua_source("ack_entries"))
        except redis.RedisError as exc:
            raise translate_redis_error(exc, "script load") from exc

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
        o = self.options
        record = {
            "last_seen_ms": int(time.time() * 1000),
            "partitions": self.owned_partitions(),
            "max_partitions": o.max_partitions,
            "host": socket.gethostname(),
            "pid": os.getpid(),
        }
        try:
            self.client.hset(
                self.keys.consumers(self.topic, self.group), self.name, json.dumps(record)
            )
        except redis.RedisError as exc:
            raise translate_redis_error(exc, "heartbeat") from exc

    def _live_consumers(self) -> int:
        key = self.keys.consumers(self.topic, self.group)
        try:
            records = self.client.hgetall(key)
        except redis.RedisError as exc:
            raise translate_redis_error(exc, "consumers") from exc
        now = int(time.time() * 1000)
        live, stale = {self.name}, []
        for raw_name, raw in records.items():
            name = _text(raw_name)
            try:
                seen = int(json.loads(raw)["last_seen_ms"])
            except (ValueError, KeyError, TypeError):
                continue
            age = now - seen
            if age <= self.options.lease_ttl_ms:
                live.add(name)
            elif age > max(_HEARTBEAT_PRUNE_MS, 4 * self.options.lease_ttl_ms):
                stale.append(name)
        if stale:
            try:
                self.client.hdel(key, *stale)
            except redis.RedisError as exc:
                log.warning("pruning stale heartbeats failed: %s", exc)
        return len(live)

    def _rebalance(self) -> None:
        self._partitions = self.topics.partition_count(self.topic)
        total = self._partitions
        share = math.ceil(total / self._live_consumers())
        cap = min(share, self.options.max_partitions or total)
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
                pipe.exists(self.keys.lease(self.topic, self.group, p))
            held = pipe.execute()
        except redis.RedisError as exc:
            raise translate_redis_error(exc, "lease scan") from exc
        free = [p for p, h in zip(candidates, held, strict=True) if not h]
        offset = sum(self.name.encode()) % len(free) if free else 0
        for p in free[offset:] + free[:offset]:
            if wanted <= 0 or self._stop.is_set():
                break
            lease = self.leases.acquire(p)
            if lease is None:
                continue
            log.info("p%d acquired (epoch %d)", p, lease.epoch)
            worker = _Worker(self, lease)
            with self._lock:
                self._workers[p] = worker
            worker.start()
            wanted -= 1

    def _worker_exited(self, worker: _Worker) -> None:
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
        try:
            self.client.hdel(self.keys.consumers(self.topic, self.group), self.name)
        except redis.RedisError as exc:
            log.warning("heartbeat removal failed: %s", exc)
        log.info("consumer %s stopped: %s", self.name, self.stats)

    # --- hooks for workers --------------------------------------------------
    def _resolve_payload(self, message: Message, raw_fields: Mapping[Any, Any]) -> Message:
        payload_field = raw_fields.get(b"payload", raw_fields.get("payload"))
        if not is_out_of_line(message.headers, payload_field):
            return message
        value = load_payload(self.client, message.headers)
        headers = dict(message.headers)
        if value is None:
            headers["x-payload-missing"] = "true"
            headers["x-payload-missing-ref"] = message.headers[PAYLOAD_HASH_REF]
            self._count("payload_missing", message.partition)
            return _replace_message(message, payload="", payload_bytes=None, headers=headers)
        if isinstance(value, bytes):
            return _replace_message(
                message,
                payload=value.decode("utf-8", errors="replace"),
                payload_bytes=value,
                headers=headers,
            )
        return _replace_message(message, payload=value, payload_bytes=None, headers=headers)

    def _acked(self, partition: int, ids: Sequence[str]) -> None:
        self._count("acked", partition, len(ids))
        if self.on_ack is not None:
            self.on_ack(partition, ids)

    def _count(self, what: str, partition: int, amount: int = 1) -> None:
        if self.metrics is None:
            return
        try:
            self.metrics.inc(what, self.topic, partition, amount)
        except Exception:  # metrics must never break consumption
            log.debug("metrics update failed", exc_info=True)

    def _observe(self, partition: int, latency_ms: float) -> None:
        if self.metrics is None:
            return
        try:
            self.metrics.inc("consumed", self.topic, partition, 1)
            self.metrics.observe_handle_latency(self.topic, partition, latency_ms)
        except Exception:
            log.debug("metrics update failed", exc_info=True)


def _replace_message(message: Message, **changes: Any) -> Message:
    return replace(message, **changes)
