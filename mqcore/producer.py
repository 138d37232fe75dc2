"""The producer: validated, one-round-trip sends in the Java entry format.

Everything that can be refused is refused before the first write: unknown
topic, bad names, payloads over ``MQConfig.max_payload_bytes``, headers that are
not strings or over ``mqcore.codec.HEADERS_SEND_MAX_BYTES`` as JSON, a partition out of
range. The topic's partition count is cached for ``cache_ttl_s``
(:mod:`mqcore.partitioner` also picks each message's partition) so a send is a single
XADD; the XADD uses ``NOMKSTREAM``, so a topic deleted since it was cached is detected
(no stream is resurrected) and reported as :class:`UnknownTopicError`.

Entry fields are those the Java library writes to a partition: ``payload``,
``timestamp`` (ISO-8601 like Java's ``Instant.toString``), ``retryCount``,
``maxRetries``, ``topic``, ``partitionId``, optional ``key`` and ``headers``
(a JSON object that always carries ``partitionId``). Payloads over
``MQConfig.inline_payload_bytes`` go out of line (see :mod:`mqcore.payloads`)
in one script with the XADD.

``wait_replicas=N`` makes a send acknowledged only once N replicas have it: the writes of
a send (or of one ``send_many`` batch) and a ``WAIT N timeout`` go out in one round trip on
one connection (WAIT counts the replicas that have that connection's writes), and fewer
than N raises :class:`~mqcore.errors.NotReplicatedError`. A Sentinel failover promotes a
replica, so what such a producer was told is written survives it (Redis replication is
asynchronous: without WAIT an acknowledged write can be lost). Not on Redis Cluster.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NamedTuple

from mqcore.boundary import redis_errors, translate
from mqcore.clock import iso_now
from mqcore.codec import HEADERS_SEND_MAX_BYTES
from mqcore.config import MQConfig, RedisClient
from mqcore.errors import (
    InvalidArgumentError,
    MQError,
    NotReplicatedError,
    PayloadTooLargeError,
)
from mqcore.metrics import Metrics
from mqcore.partitioner import Partitioner
from mqcore.payloads import (
    FORMAT_RAW,
    PAYLOAD_FORMAT,
    PAYLOAD_HASH_REF,
    PAYLOAD_ORIGINAL_SIZE,
    PAYLOAD_STORAGE_TYPE,
    STORAGE_TYPE_HASH,
    encode_stored_payload,
)
from mqcore.scripts import script_for
from mqcore.wire import Command, Wire, first_error

__all__ = ["OutgoingMessage", "Producer", "SendResult", "parse_header_assignment"]

DEFAULT_CACHE_TTL_S = 1.0
MAX_BATCH_SIZE = 10_000
DEFAULT_WAIT_TIMEOUT_MS = 1000  # how long a send waits for its replicas (wait_replicas)


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


class _Plan(NamedTuple):
    """One validated message, ready to write."""

    partition: int
    args: tuple[Any, ...]  # the full XADD command (with NOMKSTREAM)
    stored_payload: bytes | None = None  # set when the payload goes out of line
    payload_key: str = ""
    payload_index: str = ""  # the topic's payload index set


def parse_header_assignment(text: str) -> tuple[str, str]:
    """``NAME=VALUE`` (the CLI's ``--header``, the console's produce form) -> (name, value);
    InvalidArgumentError when there is no ``=`` or no name. The producer checks the rest."""
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise InvalidArgumentError(f"a header is NAME=VALUE, got {text[:80]!r}")
    return name, value


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
        wait_replicas: int = 0,
        wait_timeout_ms: int = DEFAULT_WAIT_TIMEOUT_MS,
    ) -> None:
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise InvalidArgumentError(f"max_retries must be >= 0, got {max_retries!r}")
        _check_wait(config, wait_replicas, wait_timeout_ms)
        self.wait_replicas = wait_replicas
        self.wait_timeout_ms = wait_timeout_ms
        self.config = config
        self.keys = config.keys
        self._own_client = client is None
        self.client = client if client is not None else config.client()
        self.metrics = metrics
        self.max_retries = max_retries
        self._partitioner = Partitioner(self.client, self.keys, cache_ttl_s=cache_ttl_s)
        self._payload_ttl_ms = max(0, int(config.payload_ttl_ms or 0))
        self._max_payload = config.max_payload_bytes
        self._inline = config.inline_payload_bytes
        self._default_retries = str(max_retries)
        self._prefixes: dict[tuple[str, int], tuple[Any, ...]] = {}
        self._plain_headers: dict[int, str] = {}
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
        retries = self._retries(max_retries)
        count = self._partitioner.count(topic)
        plan = self._plan(topic, count, payload, key, headers, partition, retries, iso_now())
        entry_id = self._write_one(topic, plan)
        if self.metrics is not None:
            self.metrics.inc_produced(topic, plan.partition)
        return SendResult(topic, plan.partition, entry_id)

    def check(self, topic: str, message: OutgoingMessage) -> None:
        """Raise what :meth:`send` would raise on this bad input, writing nothing (a caller
        that records an intent first, such as the console's audited produce, checks here)."""
        count = self._partitioner.count(topic)
        m, retries = message, self._retries(None)
        self._plan(topic, count, m.payload, m.key, m.headers, m.partition, retries, iso_now())

    def send_many(
        self, topic: str, messages: Iterable[OutgoingMessage], *, batch_size: int = 1000
    ) -> list[SendResult]:
        """Append many messages, ``batch_size`` XADDs per round trip, in order.

        Every message is validated before the first write, so bad input writes
        nothing. The entries of one call share one ``timestamp``. Out-of-line
        payloads are written one script call each. A batch goes out through
        :mod:`mqcore.wire` and is never re-sent: a lost connection raises
        ``ConnectionLostError`` (the batch may be partly written).
        """
        if isinstance(batch_size, bool) or not isinstance(batch_size, int):
            raise InvalidArgumentError(f"batch_size must be an integer, got {batch_size!r}")
        if not 1 <= batch_size <= MAX_BATCH_SIZE:
            raise InvalidArgumentError(f"batch_size must be 1..{MAX_BATCH_SIZE}, got {batch_size}")
        count = self._partitioner.count(topic)
        retries = self._retries(None)
        ts = iso_now()
        plan = self._plan
        plans: list[_Plan] = []
        for m in messages:
            if type(m) is not OutgoingMessage:
                raise InvalidArgumentError(f"send_many takes OutgoingMessage items, got {m!r:.80}")
            plans.append(plan(topic, count, m.payload, m.key, m.headers, m.partition, retries, ts))
        results: list[SendResult] = []
        metrics = self.metrics
        for start in range(0, len(plans), batch_size):
            batch = plans[start : start + batch_size]
            ids = self._write_batch(topic, batch)
            results.extend(
                [SendResult(topic, p.partition, i) for p, i in zip(batch, ids, strict=True)]
            )
            if metrics is not None:
                for p in batch:
                    metrics.inc_produced(topic, p.partition)
        return results

    def partition_count(self, topic: str) -> int:
        """The topic's partition count as this producer sees it (cached briefly)."""
        return self._partitioner.count(topic)

    def invalidate(self, topic: str | None = None) -> None:
        """Forget cached partition counts (all, or one topic's)."""
        self._partitioner.invalidate(topic)

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
    def _retries(self, max_retries: int | None) -> str:
        if max_retries is None:
            return self._default_retries
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise InvalidArgumentError(f"max_retries must be >= 0, got {max_retries!r}")
        return str(max_retries)

    def _prefix(self, topic: str, partition: int) -> tuple[Any, ...]:
        prefix = self._prefixes.get((topic, partition))
        if prefix is None:
            stream = self.keys.partition(topic, partition)
            prefix = ("XADD", stream, "NOMKSTREAM", "*")
            if len(self._prefixes) > 100_000:
                self._prefixes.clear()
            self._prefixes[(topic, partition)] = prefix
        return prefix

    def _plan(
        self,
        topic: str,
        count: int,
        payload: str | bytes,
        key: str | None,
        headers: Mapping[str, str] | None,
        partition: int | None,
        retries: str,
        ts: str,
    ) -> _Plan:
        if isinstance(payload, str):
            try:
                size = len(payload.encode("utf-8"))
            except UnicodeEncodeError as exc:
                raise InvalidArgumentError(f"payload is not valid text: {exc}") from None
        elif isinstance(payload, bytes):
            size = len(payload)
        else:
            raise InvalidArgumentError(
                f"payload must be str or bytes, got {type(payload).__name__}"
            )
        if size > self._max_payload:
            raise PayloadTooLargeError(
                f"payload is {size} bytes; the limit is {self._max_payload} bytes "
                "(MQConfig.max_payload_bytes)"
            )
        if key is not None:
            if type(key) is not str:
                raise InvalidArgumentError(f"key must be a str, got {type(key).__name__}")
            try:
                key.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise InvalidArgumentError(f"key is not valid text: {exc}") from None
        part = self._partitioner.choose(topic, count, key, partition)
        out_of_line = size > self._inline
        if headers or out_of_line:
            header_map = self._header_map(headers)
            header_map["partitionId"] = str(part)
        else:
            header_json = self._plain_headers.get(part)
            if header_json is None:
                header_json = self._plain_headers[part] = json.dumps(
                    {"partitionId": str(part)}, separators=(",", ":")
                )
        stored: bytes | None = None
        payload_key = ""
        if out_of_line:
            stored, raw = encode_stored_payload(payload)
            payload_key = self.keys.payload(topic, part, uuid.uuid4().hex)
            header_map[PAYLOAD_STORAGE_TYPE] = STORAGE_TYPE_HASH
            header_map[PAYLOAD_HASH_REF] = payload_key
            header_map[PAYLOAD_ORIGINAL_SIZE] = str(size)
            if raw:
                header_map[PAYLOAD_FORMAT] = FORMAT_RAW
        if headers or out_of_line:
            header_json = json.dumps(header_map, ensure_ascii=False, separators=(",", ":"))
            try:
                header_bytes = len(header_json.encode("utf-8"))
            except UnicodeEncodeError as exc:
                raise InvalidArgumentError(f"headers are not valid text: {exc}") from None
            if header_bytes > HEADERS_SEND_MAX_BYTES:
                raise InvalidArgumentError(
                    f"headers are {header_bytes} bytes as JSON; the limit is "
                    f"{HEADERS_SEND_MAX_BYTES} bytes (mqcore.codec.HEADERS_SEND_MAX_BYTES)"
                )
        prefix = self._prefixes.get((topic, part)) or self._prefix(topic, part)
        tail = (
            "timestamp", ts, "retryCount", "0", "maxRetries", retries, "topic", topic,
            "partitionId", str(part),
        )  # fmt: skip
        if stored is None:
            if key is None:
                return _Plan(part, (*prefix, "payload", payload, *tail, "headers", header_json))
            return _Plan(
                part, (*prefix, "payload", payload, *tail, "key", key, "headers", header_json)
            )
        keyed = () if key is None else ("key", key)
        args = (*prefix, *tail, *keyed, "headers", header_json)
        return _Plan(part, args, stored, payload_key, self.keys.payload_index(topic))

    @staticmethod
    def _header_map(headers: Mapping[str, str] | None) -> dict[str, str]:
        header_map: dict[str, str] = {}
        if not headers:
            return header_map
        if not isinstance(headers, Mapping):
            raise InvalidArgumentError(
                f"headers must be a mapping of str to str, got {type(headers).__name__}"
            )
        for name, value in headers.items():
            if type(name) is not str or type(value) is not str:
                raise InvalidArgumentError(
                    f"header names and values must be str; got {name!r:.60}: {type(value).__name__}"
                )
            if not name:
                raise InvalidArgumentError("header names must not be empty")
            header_map[name] = value
        return header_map

    # --- writes ---------------------------------------------------------------
    def _xadd(self, client: Any, plan: _Plan, *, nomkstream: bool = True) -> Any:
        args = plan.args if nomkstream else tuple(a for a in plan.args if a != "NOMKSTREAM")
        if plan.stored_payload is None:
            return client.execute_command(*args)
        keys, script_args = self._script_call(plan, args, nomkstream)
        return script_for("add_entry_with_payload")(keys=keys, args=script_args, client=client)

    def _script_call(
        self, plan: _Plan, args: tuple[Any, ...], nomkstream: bool
    ) -> tuple[list[Any], list[Any]]:
        """KEYS and ARGV of the script that writes an out-of-line payload with its XADD."""
        first_field = args.index("*") + 1
        keys = [args[1], plan.payload_key, plan.payload_index]
        nomk = 1 if nomkstream else 0
        return keys, [plan.stored_payload, self._payload_ttl_ms, nomk, *args[first_field:]]

    def _write_one(self, topic: str, plan: _Plan) -> str:
        try:
            if self.wait_replicas:
                return self._write_acked(topic, [plan])[0]
            entry_id = self._xadd(self.client, plan)
            if entry_id is None:
                entry_id = self._missing_stream(topic, plan)
        except MQError:
            raise
        except Exception as exc:
            raise _translate(exc, f"send to {topic!r}") from exc
        return entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)

    def _missing_stream(self, topic: str, plan: _Plan) -> Any:
        """NOMKSTREAM refused: the topic was deleted, or a Java topic has no stream yet."""
        self.invalidate(topic)
        self._partitioner.count(topic, refresh=True)  # raises UnknownTopicError when it is gone
        if self.wait_replicas:
            return self._write_acked(topic, [plan], nomkstream=False)[0]
        return self._xadd(self.client, plan, nomkstream=False)

    def _write_acked(self, topic: str, batch: list[_Plan], *, nomkstream: bool = True) -> list[str]:
        """``batch``'s writes, then ``WAIT``, in one round trip on one connection; raises
        NotReplicatedError when fewer than ``wait_replicas`` replicas had them in time."""
        what = f"send to {topic!r}"
        script = script_for("add_entry_with_payload")
        cmds: list[Command] = []
        for plan in batch:
            args = plan.args if nomkstream else tuple(a for a in plan.args if a != "NOMKSTREAM")
            if plan.stored_payload is None:
                cmds.append(args)
            else:
                cmds.append(script.command(*self._script_call(plan, args, nomkstream)))
        wait = ("WAIT", self.wait_replicas, self.wait_timeout_ms)
        with self._boundary(what):
            if len(cmds) > sum(p.stored_payload is None for p in batch):
                script.load(self.client)  # EVALSHA in the round trip: loaded beforehand
            *ids, replicas = Wire(self.client, len(cmds) + 1, what).run(
                [*cmds, wait], step=len(cmds) + 1
            )
        failed = first_error([*ids, replicas])
        if failed is not None:
            raise translate(failed, what) from failed
        if None in ids:  # NOMKSTREAM refused: written again without it, waited for again
            ids = [
                self._missing_stream(topic, batch[i]) if entry_id is None else entry_id
                for i, entry_id in enumerate(ids)
            ]
        out = [i.decode() if isinstance(i, bytes) else str(i) for i in ids]
        if int(replicas) < self.wait_replicas:
            raise NotReplicatedError(
                f"{what}: {int(replicas)} of {self.wait_replicas} replicas had the write(s) "
                f"within {self.wait_timeout_ms} ms; a failover may lose them",
                out,
            )
        return out

    def _write_batch(self, topic: str, batch: list[_Plan]) -> list[str]:
        """The inline XADDs in one round trip (:mod:`mqcore.wire`: packed by hiredis,
        replies unparsed), then one script call per out-of-line payload."""
        if self.wait_replicas:
            return self._write_acked(topic, batch)
        what = f"send to {topic!r}"
        with self._boundary(what):
            inline = [p.args for p in batch if p.stored_payload is None]
            ids = Wire(self.client, len(batch), what).run(inline)
            out_of_line = len(inline) < len(batch)
            if out_of_line:
                replies = iter(ids)
                ids = [None if p.stored_payload is not None else next(replies) for p in batch]
            failed = next((i for i in ids if isinstance(i, Exception)), None)
            if failed is not None:  # an error reply: the other commands stand
                raise translate(failed, what) from failed
            for i, p in enumerate(batch if out_of_line else ()):
                if p.stored_payload is not None:
                    ids[i] = self._xadd(self.client, p)
            if None in ids:
                for i, entry_id in enumerate(ids):
                    if entry_id is None:
                        ids[i] = self._missing_stream(topic, batch[i])
        return [i.decode() if isinstance(i, bytes) else str(i) for i in ids]

    @contextmanager
    def _boundary(self, what: str) -> Iterator[None]:
        try:
            with redis_errors(what):
                yield
        except UnicodeEncodeError as exc:
            raise InvalidArgumentError(f"{what}: payload is not valid text: {exc}") from None


def _check_wait(config: MQConfig, replicas: int, timeout_ms: int) -> None:
    if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 0:
        raise InvalidArgumentError(f"wait_replicas must be >= 0, got {replicas!r}")
    if replicas and config.cluster:
        raise InvalidArgumentError("wait_replicas is not supported on Redis Cluster")
    limit = int(config.socket_timeout * 1000)
    bad_timeout = isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int)
    if bad_timeout or not 0 < timeout_ms < limit:
        raise InvalidArgumentError(
            f"wait_timeout_ms must be 1..{limit - 1} (below the socket timeout), got {timeout_ms!r}"
        )


def _translate(exc: Exception, what: str) -> MQError:
    if isinstance(exc, UnicodeEncodeError):
        return InvalidArgumentError(f"{what}: payload is not valid text: {exc}")
    return translate(exc, what)
