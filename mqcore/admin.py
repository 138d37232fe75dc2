"""Read and operator views of an MQ deployment: lag, pending, leases, consumers, retry, snapshot.

Everything here is bounded: no command it sends blocks Redis for long on big data
(a few ms at most). Pending entries are scanned with paged ``XPENDING`` (never the
``IDLE`` option); lag falls back to a bounded ``XRANGE`` count when Redis reports
NULL, and says whether the answer is exact. :meth:`Admin.snapshot` gathers all of
it for every registered topic in pipelined batches (the collectors' workhorse).
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Iterable, Sequence
from typing import Any

import redis

from mqcore import lag as lagmath
from mqcore.boundary import redis_errors
from mqcore.codec import (
    decode_fields,
    decode_text,
    parse_headers,
    partition_count_from_meta,
    payload_text,
    validate_id,
)
from mqcore.config import MQConfig, RedisClient
from mqcore.errors import (
    InvalidArgumentError,
    MQError,
    UnknownGroupError,
    UnknownMessageError,
    UnknownPartitionError,
    UnknownTopicError,
)
from mqcore.keys import KeySpace, validate_name
from mqcore.models import (
    ClusterSnapshot,
    ConsumerInfo,
    GroupLag,
    LagExactness,
    LeaseInfo,
    Message,
    PartitionLag,
    PendingEntry,
    PendingPage,
    RetryBacklog,
)
from mqcore.payloads import is_out_of_line, load_payload

__all__ = [
    "PENDING_PAGE",
    "Admin",
]

PENDING_PAGE = 1000  # XPENDING page size: ~0.3 ms of Redis time each on a 1M PEL


# --- pure helpers (unit tested without Redis) --------------------------------------------


def _int(raw: Any, default: int) -> int:
    try:
        return int(raw)
    except (TypeError, ValueError):
        return default


def _now_ms() -> int:
    return int(time.time() * 1000)


def _no_such_key(exc: BaseException) -> bool:
    return isinstance(exc, redis.ResponseError) and "no such key" in str(exc).lower()


def _missing_as_none(replies: list[Any], what: str) -> list[Any]:
    """Pipeline replies with a missing stream or group as None; other errors raise MQError."""
    out: list[Any] = []
    for reply in replies:
        if isinstance(reply, redis.ResponseError) and (
            "NOGROUP" in str(reply) or _no_such_key(reply)
        ):
            out.append(None)
        elif isinstance(reply, Exception):
            raise MQError(f"{what}: Redis error: {reply}") from reply
        else:
            out.append(reply)
    return out


# --- Admin ---------------------------------------------------------------------------------


class Admin:
    """Bounded read views and operator actions over one deployment (see module docstring)."""

    def __init__(self, config: MQConfig, client: RedisClient | None = None) -> None:
        self.config = config
        self.keys: KeySpace = config.keys
        self.client: RedisClient = client if client is not None else config.client()

    # --- topics --------------------------------------------------------------------------
    def topics(self) -> list[str]:
        """Registered topic names, sorted (registry set; never SCAN)."""
        with redis_errors("list topics"):
            return sorted(decode_text(t) for t in self.client.smembers(self.keys.registry()))

    def partition_count(self, topic: str) -> int:
        """Partition count of a registered topic, or UnknownTopicError."""
        validate_topic(topic)
        with redis_errors(f"read topic {topic}"):
            pipe = self.client.pipeline(transaction=False)
            pipe.sismember(self.keys.registry(), topic)
            pipe.hget(self.keys.meta(topic), "partitionCount")
            member, count = pipe.execute()
        if not member:
            raise UnknownTopicError(f"unknown topic {topic!r}")
        return partition_count_from_meta(count)

    def _check_partition(self, topic: str, partition: int) -> int:
        count = self.partition_count(topic)
        if not isinstance(partition, int) or not 0 <= partition < count:
            raise UnknownPartitionError(
                f"topic {topic!r} has partitions 0..{count - 1}, not {partition!r}"
            )
        return count

    def groups(self, topic: str, partitions: int | None = None) -> list[str]:
        """Consumer groups present on any partition of the topic."""
        count = partitions if partitions is not None else self.partition_count(topic)
        replies = self._pipeline_lenient(
            [("xinfo_groups", (self.keys.partition(topic, p),)) for p in range(count)]
        )
        names: set[str] = set()
        for reply in replies:
            if isinstance(reply, list):
                names.update(decode_text(g["name"]) for g in reply)
        return sorted(names)

    def _pipeline_lenient(self, calls: list[tuple[str, tuple[Any, ...]]]) -> list[Any]:
        """Run calls in one pipeline; a missing stream answers None, other errors raise."""
        with redis_errors("pipeline"):
            pipe = self.client.pipeline(transaction=False)
            for name, args in calls:
                getattr(pipe, name)(*args)
            replies = pipe.execute(raise_on_error=False) if calls else []
        out: list[Any] = []
        for reply in replies:
            if isinstance(reply, Exception):
                if _no_such_key(reply):
                    out.append(None)
                    continue
                with redis_errors("pipeline"):
                    raise reply
            out.append(reply)
        return out

    # --- lag ------------------------------------------------------------------------------
    def lag(self, topic: str, group: str | None = None) -> list[GroupLag]:
        """Lag of every group (or one) per partition, with totals per group.

        ``lag`` comes from ``XINFO GROUPS``; when Redis reports NULL it is counted
        with bounded ``XRANGE`` pages (at most ``mqcore.lag.LAG_COUNT_CAP`` entries) and marked
        COUNTED (exact) or APPROXIMATE (a lower bound). ``lag_ms`` is the age of the
        first undelivered entry; ``oldest_pending_ms`` the idle time of the lowest
        pending id (``XPENDING - + 1``).
        """
        if group is not None:
            validate_name("group", group)
        count = self.partition_count(topic)
        now = _now_ms()
        streams = [self.keys.partition(topic, p) for p in range(count)]
        infos = self._pipeline_lenient(
            [("xinfo_groups", (k,)) for k in streams] + [("xinfo_stream", (k,)) for k in streams]
        )
        groups_by_p, stream_by_p = infos[:count], infos[count:]
        rows: dict[str, list[dict[str, Any]]] = {}
        for p, reply in enumerate(groups_by_p):
            for g in reply or []:
                name = decode_text(g["name"])
                if group is None or name == group:
                    rows.setdefault(name, []).append({"p": p, "g": g, "s": stream_by_p[p]})
        if group is not None and group not in rows:
            raise UnknownGroupError(f"group {group!r} does not exist on topic {topic!r}")
        follow: list[tuple[str, tuple[Any, ...]]] = []
        for name, items in rows.items():
            for it in items:
                key = streams[it["p"]]
                last = decode_text(it["g"]["last-delivered-id"])
                page = 1 if it["g"].get("lag") is not None else lagmath.COUNT_PAGE
                follow.append(("xrange", (key, "(" + last, "+", page)))
                follow.append(("xpending_range", (key, name, "-", "+", 1)))
        replies = self._pipeline_lenient(follow)
        out: list[GroupLag] = []
        i = 0
        for name in sorted(rows):
            parts: list[PartitionLag] = []
            for it in rows[name]:
                first_page, oldest = replies[i], replies[i + 1]
                i += 2
                parts.append(
                    self._partition_lag(
                        streams[it["p"]], it["p"], it["g"], it["s"], first_page, oldest, now
                    )
                )
            out.append(lagmath.combine_group_lag(name, parts))
        return out

    def _partition_lag(
        self,
        key: str,
        partition: int,
        g: dict[str, Any],
        stream: dict[str, Any] | None,
        first_page: list[Any] | None,
        oldest: list[dict[str, Any]] | None,
        now: int,
    ) -> PartitionLag:
        last = decode_text(g["last-delivered-id"])
        page = [decode_text(e[0]) for e in first_page or []]
        lag_raw = g.get("lag")
        if lag_raw is not None:
            lag, exactness, reason = int(lag_raw), LagExactness.EXACT, ""
        else:

            def fetch_after(cursor: str) -> list[str]:
                with redis_errors("count lag"):
                    entries = self.client.xrange(key, "(" + cursor, "+", lagmath.COUNT_PAGE)
                return [decode_text(e[0]) for e in entries]

            lag, exactness, reason = lagmath.count_null_lag(page, fetch_after)
        row = lagmath.partition_row(
            partition=partition,
            last_delivered_id=last,
            lag=lag,
            exactness=exactness,
            reason=reason,
            first_id=page[0] if page else None,
            now_ms=now,
            pending=int(g.get("pending") or 0),
            oldest_pending_ms=int(oldest[0]["time_since_delivered"]) if oldest else None,
            entries_read=None if g.get("entries-read") is None else int(g["entries-read"]),
            length=int(stream["length"]) if stream else 0,
            last_id=decode_text(stream["last-generated-id"]) if stream else "0-0",
        )
        return PartitionLag(**{**row, "exactness": exactness})

    # --- pending ----------------------------------------------------------------------------
    def pending(
        self,
        topic: str,
        group: str,
        *,
        sort: str = "idle",
        order: str = "desc",
        limit: int = 50,
        offset: int = 0,
        consumer: str | None = None,
        partition: int | None = None,
        min_idle_ms: int = 0,
        min_deliveries: int = 0,
        max_scan: int = 2_000_000,
    ) -> PendingPage:
        """Pending entries of a group across partitions, sorted, filtered, paged.

        Paged ``XPENDING key group (last + 1000`` per partition (one page of every
        partition per round trip), keeping a bounded heap of the best
        ``offset + limit``; never the ``IDLE`` option. ``scanned`` says how many
        PEL entries were read; ``complete`` is False when ``max_scan`` stopped it.
        """
        if sort not in ("idle", "count"):
            raise InvalidArgumentError(f"sort must be 'idle' or 'count', not {sort!r}")
        if order not in ("asc", "desc"):
            raise InvalidArgumentError(f"order must be 'asc' or 'desc', not {order!r}")
        if limit < 1 or offset < 0 or max_scan < 1 or min_idle_ms < 0 or min_deliveries < 0:
            raise InvalidArgumentError("limit and max_scan must be >= 1, offsets and minimums >= 0")
        validate_name("group", group)
        if consumer is not None and not consumer:
            raise InvalidArgumentError("consumer filter must not be empty")
        count = self.partition_count(topic)
        if partition is not None and not 0 <= partition < count:
            raise UnknownPartitionError(f"topic {topic!r} has partitions 0..{count - 1}")
        started = time.perf_counter()
        parts = [partition] if partition is not None else list(range(count))
        cursors: dict[int, str] = dict.fromkeys(parts, "-")
        field = "time_since_delivered" if sort == "idle" else "times_delivered"
        sign = 1 if order == "desc" else -1
        keep = offset + limit
        heap: list[tuple[int, int, int, dict[str, Any]]] = []  # (sort key, -scan order, p, entry)
        scanned = total = 0
        complete = True
        seen_group = False
        filtering = min_idle_ms > 0 or min_deliveries > 0
        seq = 0  # ties keep scan order (ascending ids per partition)
        while cursors:
            if scanned >= max_scan:
                complete = False
                break
            calls: list[tuple[str, tuple[Any, ...]]] = []
            order_p = list(cursors)
            for p in order_p:
                args: tuple[Any, ...] = (self.keys.partition(topic, p), group, cursors[p], "+")
                calls.append(("xpending_range", (*args, PENDING_PAGE, consumer)))
            replies = self._pipeline_pending(calls)
            for p, page in zip(order_p, replies, strict=True):
                if page is None:
                    del cursors[p]
                    continue
                seen_group = True
                if len(page) < PENDING_PAGE:
                    del cursors[p]
                else:
                    cursors[p] = "(" + decode_text(page[-1]["message_id"])
                scanned += len(page)
                if filtering:
                    page = [
                        e
                        for e in page
                        if e["time_since_delivered"] >= min_idle_ms
                        and e["times_delivered"] >= min_deliveries
                    ]
                total += len(page)
                if len(heap) >= keep:
                    floor = heap[0][0]
                    page = [e for e in page if sign * e[field] > floor]
                for e in page:
                    seq -= 1
                    item = (sign * e[field], seq, p, e)
                    if len(heap) < keep:
                        heapq.heappush(heap, item)
                    elif item[:2] > heap[0][:2]:
                        heapq.heapreplace(heap, item)
        if not seen_group and not self._group_exists(topic, group, parts):
            raise UnknownGroupError(f"group {group!r} does not exist on topic {topic!r}")
        best = sorted(heap, key=lambda t: t[:2], reverse=True)
        entries = [
            PendingEntry(
                partition=p,
                id=decode_text(e["message_id"]),
                consumer=decode_text(e["consumer"]),
                idle_ms=int(e["time_since_delivered"]),
                deliveries=int(e["times_delivered"]),
            )
            for _, _, p, e in best[offset:keep]
        ]
        return PendingPage(
            entries=entries,
            scanned=scanned,
            total=total,
            elapsed_ms=(time.perf_counter() - started) * 1000,
            complete=complete,
        )

    def _pipeline_pending(self, calls: list[tuple[str, tuple[Any, ...]]]) -> list[Any]:
        """Like _pipeline_lenient, but a missing stream or group answers None."""
        with redis_errors("scan pending"):
            pipe = self.client.pipeline(transaction=False)
            for _, (key, group, start, end, count, consumer) in calls:
                pipe.xpending_range(key, group, start, end, count, consumername=consumer)
            replies = pipe.execute(raise_on_error=False)
        return _missing_as_none(replies, "scan pending")

    def _group_exists(self, topic: str, group: str, parts: list[int]) -> bool:
        return group in self.groups(topic, max(parts) + 1 if parts else 0)

    # --- leases and consumers ---------------------------------------------------------------
    def leases(self, topic: str, group: str | None = None) -> list[LeaseInfo]:
        """Partition -> owner, time left and fencing epoch, per group (one pipeline)."""
        count = self.partition_count(topic)
        groups = [validate_name("group", group)] if group else self.groups(topic, count)
        calls: list[tuple[str, tuple[Any, ...]]] = []
        for g in groups:
            for p in range(count):
                lease = self.keys.lease(topic, g, p)
                calls.append(("get", (lease,)))
                calls.append(("pttl", (lease,)))
                calls.append(("get", (self.keys.lease_epoch(topic, g, p),)))
        replies = self._pipeline_lenient(calls)
        out: list[LeaseInfo] = []
        i = 0
        for g in groups:
            for p in range(count):
                owner, ttl, epoch = replies[i : i + 3]
                i += 3
                out.append(_lease_info(g, p, owner, ttl, epoch))
        return out

    def consumers(self, topic: str, group: str | None = None) -> list[ConsumerInfo]:
        """Consumers per group: XINFO CONSUMERS over partitions joined with mqcore heartbeats."""
        count = self.partition_count(topic)
        groups = [validate_name("group", group)] if group else self.groups(topic, count)
        calls: list[tuple[str, tuple[Any, ...]]] = []
        for g in groups:
            calls.append(("hgetall", (self.keys.consumers(topic, g),)))
            calls.extend(
                ("xinfo_consumers", (self.keys.partition(topic, p), g)) for p in range(count)
            )
        replies = self._pipeline_consumers(calls)
        now = _now_ms()
        out: list[ConsumerInfo] = []
        i = 0
        for g in groups:
            beats, per_p = replies[i], replies[i + 1 : i + 1 + count]
            i += 1 + count
            stats: dict[str, dict[str, int]] = {}
            for reply in per_p:
                for c in reply or []:
                    s = stats.setdefault(decode_text(c["name"]), {"pending": 0, "idle": -1})
                    s["pending"] += int(c.get("pending") or 0)
                    idle = int(c.get("idle") or 0)
                    s["idle"] = idle if s["idle"] < 0 else min(s["idle"], idle)
            out.extend(_consumer_infos(g, stats, beats or {}, now))
        return out

    def _pipeline_consumers(self, calls: list[tuple[str, tuple[Any, ...]]]) -> list[Any]:
        with redis_errors("read consumers"):
            pipe = self.client.pipeline(transaction=False)
            for name, args in calls:
                getattr(pipe, name)(*args)
            replies = pipe.execute(raise_on_error=False)
        return _missing_as_none(replies, "read consumers")

    # --- retry backlog ------------------------------------------------------------------------
    def retry_backlog(self, topic: str) -> RetryBacklog:
        """Count of scheduled retries, the next due in the future, and the oldest due overall."""
        validate_topic(topic)
        now = _now_ms()
        zset = self.keys.retry_zset(topic)
        with redis_errors(f"read retry backlog of {topic}"):
            pipe = self.client.pipeline(transaction=False)
            pipe.zcard(zset)
            pipe.zrange(zset, 0, 0, withscores=True)
            pipe.zrangebyscore(zset, now, "+inf", start=0, num=1, withscores=True)
            card, oldest, nxt = pipe.execute()
        return _retry_backlog(card, oldest, nxt)

    # --- one message and operator actions ---------------------------------------------------
    def message(self, topic: str, partition: int, entry_id: str) -> Message:
        """One partition entry as stored; out-of-line payloads are resolved when present."""
        validate_id(entry_id)
        self._check_partition(topic, partition)
        key = self.keys.partition(topic, partition)
        with redis_errors(f"read message {entry_id}"):
            found = self.client.xrange(key, entry_id, entry_id, 1)
        if not found:
            raise UnknownMessageError(f"no entry {entry_id} in {topic} partition {partition}")
        fields = decode_fields(found[0][1])
        headers = parse_headers(fields.get("headers"))
        raw = fields.get("payload")
        if is_out_of_line(headers, raw):
            stored = load_payload(self.client, headers)
            if stored is not None:
                raw = stored.encode() if isinstance(stored, str) else stored
        text, binary = payload_text(raw)
        return Message(
            topic=topic,
            partition=partition,
            id=decode_text(found[0][0]),
            payload=text,
            payload_bytes=binary,
            key=decode_text(fields["key"]) if fields.get("key") else None,
            headers=headers,
            timestamp=decode_text(fields.get("timestamp")),
            retry_count=_int(fields.get("retryCount"), 0),
            max_retries=_int(fields.get("maxRetries"), 3),
            fields={k: decode_text(v) for k, v in fields.items()},
        )

    def claim(
        self, topic: str, group: str, partition: int, ids: Sequence[str], consumer: str
    ) -> list[str]:
        """Operator claim of pending ids to ``consumer`` (XCLAIM JUSTID); returns claimed ids."""
        validate_name("group", group)
        if not consumer or not isinstance(consumer, str):
            raise InvalidArgumentError("consumer name must be a non-empty string")
        ids = [validate_id(i) for i in ids]
        self._check_partition(topic, partition)
        if not ids:
            return []
        key = self.keys.partition(topic, partition)
        try:
            claimed = self.client.xclaim(key, group, consumer, 0, ids, justid=True)
        except redis.ResponseError as exc:
            if "NOGROUP" in str(exc):
                raise UnknownGroupError(f"group {group!r} does not exist on {topic}") from exc
            raise MQError(f"claim: Redis error: {exc}") from exc
        except redis.RedisError as exc:
            with redis_errors("claim"):
                raise exc
        return [decode_text(c) for c in claimed]

    def move_to_dlq(
        self, topic: str, group: str, partition: int, ids: Sequence[str], *, reason: str
    ) -> list[str]:
        """Dead-letter pending ids atomically (DLQ add + XACK per entry); returns the moved ids.

        Ids not pending in the group are skipped; an id trimmed while pending is
        acked (it cannot be delivered any more) but not reported as moved.
        """
        from mqcore.acks import dead_letter

        validate_name("group", group)
        ids = [validate_id(i) for i in ids]
        self._check_partition(topic, partition)
        moved: list[str] = []
        for entry_id in ids:
            try:
                result = dead_letter(
                    self.client,
                    self.keys,
                    topic=topic,
                    group=group,
                    partition=partition,
                    entry_id=entry_id,
                    reason=reason,
                    epoch=None,
                )
            except UnknownMessageError:
                continue  # not pending in this group: nothing to move
            if result:
                moved.append(entry_id)
        return moved

    # --- snapshot ---------------------------------------------------------------------------
    def snapshot(self, *, topics: Iterable[str] | None = None, batch: int = 500) -> ClusterSnapshot:
        """Everything the console shows, for every registered topic, in pipelined batches.

        See :mod:`mqcore.snapshot` for the command plan and its cost bounds.
        """
        from mqcore.snapshot import take_snapshot

        return take_snapshot(self, topics=topics, batch=batch)

    def snapshot_dict(
        self, *, topics: Iterable[str] | None = None, batch: int = 500
    ) -> dict[str, Any]:
        """:meth:`snapshot` as plain dicts (``dataclasses.asdict`` of it, field for field).

        What the console stores; cheaper than building the dataclasses.
        """
        from mqcore.snapshot import take_snapshot_dict

        return take_snapshot_dict(self, topics=topics, batch=batch)


def validate_topic(topic: str) -> str:
    try:
        return validate_name("topic", topic)
    except ValueError as exc:
        raise InvalidArgumentError(str(exc)) from exc


def _lease_info(group: str, partition: int, owner: Any, ttl: Any, epoch: Any) -> LeaseInfo:
    from mqcore.snapshot import lease_dict

    return LeaseInfo(**lease_dict(group, partition, owner, ttl, epoch))


def _consumer_infos(
    group: str, stats: dict[str, dict[str, int]], beats: dict[Any, Any], now: int
) -> list[ConsumerInfo]:
    from mqcore.snapshot import consumer_dicts

    return [ConsumerInfo(**c) for c in consumer_dicts(group, stats, beats, now)]


def _retry_backlog(card: Any, oldest: Any, nxt: Any) -> RetryBacklog:
    return RetryBacklog(
        count=int(card or 0),
        next_due_at_ms=int(nxt[0][1]) if nxt else None,
        oldest_due_at_ms=int(oldest[0][1]) if oldest else None,
    )
