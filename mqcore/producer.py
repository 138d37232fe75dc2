"""The producer: validated, one-round-trip sends in the Java entry format.

Everything that can be refused is refused before the first write: unknown
topic, bad names, payloads over ``MQConfig.max_payload_bytes``, headers that are
not strings, a partition out of range. The topic's partition count is cached
for ``cache_ttl_s`` so a send is a single XADD; the XADD uses ``NOMKSTREAM``, so
a topic deleted since it was cached is detected (no stream is resurrected) and
reported as :class:`UnknownTopicError`.

Entry fields are those of SCHEMA "Partition entry fields": ``payload``,
``timestamp`` (ISO-8601 like Java's ``Instant.toString``), ``retryCount``,
``maxRetries``, ``topic``, ``partitionId``, optional ``key`` and ``headers``
(a JSON object that always carries ``partitionId``). Payloads over
``MQConfig.inline_payload_bytes`` go out of line (see :mod:`mqcore.payloads`)
in one script with the XADD.
"""

from __future__ import annotations

import itertools
import json
import random
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from mqcore.boundary import redis_errors
from mqcore.config import MQConfig, RedisClient
from mqcore.errors import (
    InvalidArgumentError,
    PayloadTooLargeError,
    UnknownPartitionError,
    UnknownTopicError,
)
from mqcore.keys import validate_name
from mqcore.metrics import Metrics
from mqcore.partition import partition_for_key
from mqcore.payloads import (
    FORMAT_RAW,
    PAYLOAD_FORMAT,
    PAYLOAD_HASH_REF,
    PAYLOAD_ORIGINAL_SIZE,
    PAYLOAD_STORAGE_TYPE,
    STORAGE_TYPE_HASH,
    encode_stored_payload,
)
from mqcore.scripts import ScriptRegistry
from mqcore.topics import parse_partition_count

__all__ = ["OutgoingMessage", "Producer", "SendResult", "iso_now"]

DEFAULT_CACHE_TTL_S = 1.0
MAX_BATCH_SIZE = 10_000


@dataclass(frozen=True, slots=True)
class SendResult:
    topic: str
    partition: int
    id: str


@dataclass(frozen=True, slots=True)
class OutgoingMessage:
    payload: str | bytes
    key: str | None = None
    headers: Mapping[str, str] | None = None
    partition: int | None = None


@dataclass(frozen=True, slots=True)
class _Plan:
    """One validated message, ready to write."""

    partition: int
    stream: str
    index: str  # the topic's payload index set
    fields: dict[str, str | bytes]
    stored_payload: bytes | None = None  # set when the payload goes out of line
    payload_key: str = ""


def iso_now() -> str:
    """Now as ISO-8601 UTC with milliseconds and ``Z`` (what Java's Instant.parse reads)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Producer:
    """Sends messages to topics (thread-safe; share one per process)."""

    def __init__(
        self,
        config: MQConfig,
        client: RedisClient | None = None,
        *,
        metrics: Metrics | None = None,
        max_retries: int = 3,
        cache_ttl_s: float = DEFAULT_CACHE_TTL_S,
    ) -> None:
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise InvalidArgumentError(f"max_retries must be >= 0, got {max_retries!r}")
        self.config = config
        self.keys = config.keys
        self._own_client = client is None
        self.client = client if client is not None else config.client()
        self.metrics = metrics
        self.max_retries = max_retries
        self._cache_ttl_s = cache_ttl_s
        self._counts: dict[str, tuple[int, float]] = {}
        self._rr: dict[str, Iterator[int]] = {}
        self._lock = threading.Lock()
        self._scripts = ScriptRegistry(self.client)
        self._maxlen = config.maxlen if config.maxlen and config.maxlen > 0 else None
        self._closed = False

    # --- public API -----------------------------------------------------------
    def send(
        self,
        topic: str,
        payload: str | bytes,
        *,
        key: str | None = None,
        headers: Mapping[str, str] | None = None,
        partition: int | None = None,
        max_retries: int | None = None,
    ) -> SendResult:
        """Append one message; returns where it went. Raises before writing on bad input."""
        plan = self._plan(topic, payload, key, headers, partition, max_retries)
        entry_id = self._write_one(topic, plan)
        if self.metrics is not None:
            self.metrics.inc_produced(topic, plan.partition)
        return SendResult(topic, plan.partition, entry_id)

    def send_many(
        self, topic: str, messages: Iterable[OutgoingMessage], *, batch_size: int = 1000
    ) -> list[SendResult]:
        """Append many messages, pipelined ``batch_size`` at a time, in order.

        Every message is validated before the first write, so bad input writes
        nothing. Out-of-line payloads are written one script call each.
        """
        if isinstance(batch_size, bool) or not isinstance(batch_size, int):
            raise InvalidArgumentError(f"batch_size must be an integer, got {batch_size!r}")
        if not 1 <= batch_size <= MAX_BATCH_SIZE:
            raise InvalidArgumentError(f"batch_size must be 1..{MAX_BATCH_SIZE}, got {batch_size}")
        plans: list[_Plan] = []
        for m in messages:
            if not isinstance(m, OutgoingMessage):
                raise InvalidArgumentError(f"send_many takes OutgoingMessage items, got {m!r:.80}")
            plans.append(self._plan(topic, m.payload, m.key, m.headers, m.partition, None))
        results: list[SendResult] = []
        for start in range(0, len(plans), batch_size):
            batch = plans[start : start + batch_size]
            ids = self._write_batch(topic, batch)
            results.extend(
                SendResult(topic, p.partition, i) for p, i in zip(batch, ids, strict=True)
            )
            if self.metrics is not None:
                for p in batch:
                    self.metrics.inc_produced(topic, p.partition)
        return results

    def partition_count(self, topic: str) -> int:
        """The topic's partition count as this producer sees it (cached briefly)."""
        return self._count(topic)

    def invalidate(self, topic: str | None = None) -> None:
        """Forget cached partition counts (all, or one topic's)."""
        with self._lock:
            if topic is None:
                self._counts.clear()
            else:
                self._counts.pop(topic, None)

    def close(self) -> None:
        """Release the connection pool if this producer created its client."""
        if not self._closed:
            self._closed = True
            if self._own_client:
                self.client.close()

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- validation -----------------------------------------------------------
    def _count(self, topic: str, *, refresh: bool = False) -> int:
        cached = None if refresh else self._counts.get(topic)
        now = time.monotonic()
        if cached is not None and cached[1] > now:
            return cached[0]
        try:
            validate_name("topic", topic)
        except ValueError as exc:
            raise InvalidArgumentError(str(exc)) from None
        with redis_errors(f"look up topic {topic!r}"):
            pipe = self.client.pipeline(transaction=False)
            pipe.sismember(self.keys.registry(), topic)
            pipe.hget(self.keys.meta(topic), "partitionCount")
            registered, raw = pipe.execute()
        if not registered:
            self.invalidate(topic)
            raise UnknownTopicError(f"unknown topic {topic!r}: create it first")
        count = parse_partition_count(raw)
        with self._lock:
            self._counts[topic] = (count, now + self._cache_ttl_s)
        return count

    def _choose(self, topic: str, count: int, key: str | None, partition: int | None) -> int:
        if partition is not None:
            if isinstance(partition, bool) or not isinstance(partition, int):
                raise InvalidArgumentError(f"partition must be an integer, got {partition!r}")
            if not 0 <= partition < count:
                count = self._count(topic, refresh=True)  # the topic may have grown
                if not 0 <= partition < count:
                    raise UnknownPartitionError(
                        f"topic {topic!r} has partitions 0..{count - 1}; got {partition}"
                    )
            return partition
        if key is not None:
            return partition_for_key(key, count)
        rr = self._rr.get(topic)
        if rr is None:
            with self._lock:
                rr = self._rr.setdefault(topic, itertools.count(random.randrange(1 << 16)))
        return next(rr) % count

    def _plan(
        self,
        topic: str,
        payload: str | bytes,
        key: str | None,
        headers: Mapping[str, str] | None,
        partition: int | None,
        max_retries: int | None,
    ) -> _Plan:
        if not isinstance(payload, str | bytes):
            raise InvalidArgumentError(
                f"payload must be str or bytes, got {type(payload).__name__}"
            )
        if key is not None and not isinstance(key, str):
            raise InvalidArgumentError(f"key must be a str, got {type(key).__name__}")
        retries = self.max_retries if max_retries is None else max_retries
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise InvalidArgumentError(f"max_retries must be >= 0, got {retries!r}")
        size = self._payload_size(payload)
        limit = self.config.max_payload_bytes
        if size > limit:
            raise PayloadTooLargeError(
                f"payload is {size} bytes; the limit is {limit} bytes (MQConfig.max_payload_bytes)"
            )
        header_map: dict[str, str] = {}
        if headers:
            if not isinstance(headers, Mapping):
                raise InvalidArgumentError(
                    f"headers must be a mapping of str to str, got {type(headers).__name__}"
                )
            for name, value in headers.items():
                if not isinstance(name, str) or not isinstance(value, str):
                    raise InvalidArgumentError(
                        f"header names and values must be str; got {name!r:.60}: "
                        f"{type(value).__name__}"
                    )
                if not name:
                    raise InvalidArgumentError("header names must not be empty")
                header_map[name] = value
        count = self._count(topic)
        part = self._choose(topic, count, key, partition)
        header_map["partitionId"] = str(part)
        stored: bytes | None = None
        payload_key = ""
        if size > self.config.inline_payload_bytes:
            stored, raw = encode_stored_payload(payload)
            payload_key = self.keys.payload(topic, part, uuid.uuid4().hex)
            header_map[PAYLOAD_STORAGE_TYPE] = STORAGE_TYPE_HASH
            header_map[PAYLOAD_HASH_REF] = payload_key
            header_map[PAYLOAD_ORIGINAL_SIZE] = str(size)
            if raw:
                header_map[PAYLOAD_FORMAT] = FORMAT_RAW
        fields: dict[str, str | bytes] = {}
        if stored is None:
            fields["payload"] = payload
        fields["timestamp"] = iso_now()
        fields["retryCount"] = "0"
        fields["maxRetries"] = str(retries)
        fields["topic"] = topic
        fields["partitionId"] = str(part)
        if key is not None:
            fields["key"] = key
        try:
            header_json = json.dumps(header_map, ensure_ascii=False, separators=(",", ":"))
            header_json.encode("utf-8")
            fields["headers"] = header_json
            if key is not None:
                key.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidArgumentError(f"key or headers are not valid text: {exc}") from None
        return _Plan(
            part,
            self.keys.partition(topic, part),
            self.keys.payload_index(topic),
            fields,
            stored,
            payload_key,
        )

    def _payload_size(self, payload: str | bytes) -> int:
        if isinstance(payload, bytes):
            return len(payload)
        try:
            return len(payload.encode("utf-8"))
        except UnicodeEncodeError as exc:
            raise InvalidArgumentError(f"payload is not valid text: {exc}") from None

    # --- writes ---------------------------------------------------------------
    def _xadd(self, client: Any, plan: _Plan, *, nomkstream: bool) -> Any:
        if plan.stored_payload is not None:
            script = self._scripts.get("add_entry_with_payload")
            args: list[Any] = [
                plan.stored_payload, 0, self._maxlen or 0, 1 if nomkstream else 0,
            ]  # fmt: skip
            for name, value in plan.fields.items():
                args += [name, value]
            return script(
                keys=[plan.stream, plan.payload_key, plan.index], args=args, client=client
            )
        return client.xadd(
            plan.stream,
            plan.fields,
            maxlen=self._maxlen,
            approximate=True,
            nomkstream=nomkstream,
        )

    def _write_one(self, topic: str, plan: _Plan) -> str:
        with self._boundary(f"send to {topic!r}"):
            entry_id = self._xadd(self.client, plan, nomkstream=True)
            if entry_id is None:
                entry_id = self._missing_stream(topic, plan)
        return _text(entry_id)

    def _missing_stream(self, topic: str, plan: _Plan) -> Any:
        """NOMKSTREAM refused: the topic was deleted, or a Java topic has no stream yet."""
        self.invalidate(topic)
        self._count(topic, refresh=True)  # raises UnknownTopicError when it is gone
        return self._xadd(self.client, plan, nomkstream=False)

    def _write_batch(self, topic: str, batch: list[_Plan]) -> list[str]:
        ids: list[Any] = [None] * len(batch)
        with self._boundary(f"send to {topic!r}"):
            pipe = self.client.pipeline(transaction=False)
            inline = [i for i, p in enumerate(batch) if p.stored_payload is None]
            for i in inline:
                self._xadd(pipe, batch[i], nomkstream=True)
            if inline:
                for i, reply in zip(inline, pipe.execute(), strict=True):
                    ids[i] = reply
            for i, p in enumerate(batch):
                if p.stored_payload is not None:
                    ids[i] = self._xadd(self.client, p, nomkstream=True)
            for i, entry_id in enumerate(ids):
                if entry_id is None:
                    ids[i] = self._missing_stream(topic, batch[i])
        return [_text(i) for i in ids]

    @contextmanager
    def _boundary(self, what: str) -> Iterator[None]:
        try:
            with redis_errors(what):
                yield
        except UnicodeEncodeError as exc:
            raise InvalidArgumentError(f"{what}: payload is not valid text: {exc}") from None


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
