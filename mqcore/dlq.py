"""Dead letters: browse, filter, get, replay (idempotent), delete, purge.

Letters are read the way Java writes them (docs/redis-layout.md, DLQ entries): the real
partition is ``headers.partitionId``; the top-level ``partitionId`` (always 0 in
Java) is only a fallback. Browsing is newest first with an exclusive cursor and a
bounded scan that reports how much it read.

Replay routing (``replay_letters.lua``, atomic per letter), in order:

1. ``target_partition`` when given (on ``target_topic`` when given);
2. the letter's original partition (``headers.partitionId``, else the top-level
   field) when it is below the target's current partition count;
3. else Java ``String.hashCode(key) mod P`` of the letter's key (so after a grow
   from 4 to 8 partitions a letter keeps its original partition, and a letter
   whose partition is gone lands where its key lives now);
4. else partition 0.

The new entry has ``retryCount=0``, ``timestamp=now``, the letter's payload,
key, ``maxRetries`` and headers, plus ``x-replayed-from-dlq`` (the letter's id)
and ``x-original-message-id`` (kept, or set from ``originalMessageId``). The
replay record (dlq id -> new id, topic, partition, when, by whom) is written in
the same script, so a letter already replayed is skipped unless ``force``. The
letter itself is kept, as Java does.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from operator import itemgetter
from typing import Any

import redis

from mqcore.admin import validate_topic
from mqcore.boundary import redis_errors
from mqcore.clock import iso_from_ms
from mqcore.codec import _SCAN as _SCAN_HEADERS
from mqcore.codec import U64 as _U64
from mqcore.codec import (
    decode_fields,
    decode_text,
    id_tuple,
    parse_headers,
    partition_count_from_meta,
    validate_id,
)
from mqcore.config import MQConfig, RedisClient
from mqcore.errors import (
    InvalidArgumentError,
    UnknownMessageError,
    UnknownPartitionError,
    UnknownTopicError,
)
from mqcore.keys import KeySpace
from mqcore.models import DlqLetter, DlqPage, ReplayRecord, ReplayResult
from mqcore.scripts import call_script
from mqcore.wire import Wire

__all__ = [
    "REPLAY_BATCH",
    "DeadLetters",
    "letter_from_entry",
    "letters_from_entries",
    "parse_records",
]

REPLAY_BATCH = 100  # letters per script call (bounded Redis time per call)
_SCAN_PAGE = 500
_FOLLOWUP_SCAN = 10_000
_META_TTL_S = 5.0
REPLAYED_HEADER = "x-replayed-from-dlq"


def _num(raw: Any, default: int) -> int:
    try:
        return int(raw)
    except (TypeError, ValueError):
        return default


def _bytes_keyed(raw_fields: Any) -> dict[bytes, Any]:
    """Entry fields as ``{bytes: bytes}`` from a dict (either key type) or a flat RESP list."""
    if raw_fields.__class__ is list:
        pairs = iter(raw_fields)
        return dict(zip(pairs, pairs, strict=False))
    if not isinstance(raw_fields, dict):
        return {}
    if all(k.__class__ is bytes for k in raw_fields):
        return raw_fields
    return {
        (k if isinstance(k, bytes) else str(k).encode()): (
            v if isinstance(v, bytes) or v is None else str(v).encode()
        )
        for k, v in raw_fields.items()
    }


def _partition_of(headers: dict[str, str], top_level: Any) -> int:
    """The ``partitionId`` header when it is a partition, else the top-level field (default 0)."""
    hp = headers.get("partitionId")
    if hp is not None:
        try:
            partition = int(hp)
        except ValueError:
            partition = -1
        if partition >= 0:
            return partition
    return _num(top_level, 0)


def letter_from_entry(entry_id: Any, raw_fields: Any) -> DlqLetter:
    """A DLQ stream entry as a :class:`DlqLetter` (partition from headers first).

    ``raw_fields`` is a field mapping (bytes or str keys) or the flat list Redis
    sends. Kept lean: a page of 50 letters must decode in about the time of its
    XREVRANGE.
    """
    get = _bytes_keyed(raw_fields).get
    headers = parse_headers(get(b"headers"))
    partition = _partition_of(headers, get(b"partitionId"))
    key = get(b"key")
    raw_payload = get(b"payload")
    if raw_payload is None:
        text, binary = "", None
    else:
        try:
            text, binary = raw_payload.decode(), None
        except UnicodeDecodeError:
            text, binary = raw_payload.decode("utf-8", "replace"), raw_payload
    return DlqLetter(
        entry_id.decode() if entry_id.__class__ is bytes else str(entry_id),
        partition,
        decode_text(get(b"originalMessageId")),
        _num(get(b"retryCount"), 0),
        _num(get(b"maxRetries"), 3),
        decode_text(get(b"failedAt")),
        decode_text(get(b"timestamp")),
        decode_text(key) if key else headers.get("key") or None,
        text,
        binary,
        headers,
        decode_text(get(b"originalTopic")),
    )


_WANTED = (
    b"headers",
    b"partitionId",
    b"key",
    b"payload",
    b"originalMessageId",
    b"retryCount",
    b"maxRetries",
    b"failedAt",
    b"timestamp",
    b"originalTopic",
)


def letters_from_entries(entries: Sequence[Any]) -> list[DlqLetter]:
    """:func:`letter_from_entry` for a page of entries as Redis sends them (the page's hot loop).

    Letters of one writer share a field layout: the positions of the wanted
    fields are worked out once per layout and read with one ``itemgetter``.
    Anything unusual (a mapping, bad UTF-8) takes :func:`letter_from_entry`.
    """
    out: list[DlqLetter] = []
    layout: list[Any] | None = None
    getter: Any = None
    scan, make, num, partition_of = _SCAN_HEADERS, DlqLetter, _num, _partition_of
    for entry_id, raw in entries:
        if raw.__class__ is not list or entry_id.__class__ is not bytes:
            out.append(letter_from_entry(entry_id, raw))
            continue
        names = raw[0::2]
        if names != layout:
            layout = names
            where = {name: 2 * i + 1 for i, name in enumerate(names)}
            getter = itemgetter(*(where.get(name, len(raw)) for name in _WANTED))
        try:
            hraw, praw, key, payload, orig, rc, mr, failed, stamp, otopic = getter([*raw, None])
            headers: dict[str, str] = {}
            if hraw:
                text = hraw.decode()
                try:
                    data, end = scan(text, 0)
                except StopIteration:
                    data, end = None, -1
                if end != len(text) or not isinstance(data, dict):
                    raise ValueError("unusual headers")
                for v in data.values():
                    if v.__class__ is not str:
                        raise ValueError("unusual headers")
                headers = data
            out.append(
                make(
                    entry_id.decode(),
                    partition_of(headers, praw),
                    orig.decode() if orig is not None else "",
                    num(rc, 0),
                    num(mr, 3),
                    failed.decode() if failed is not None else "",
                    stamp.decode() if stamp is not None else "",
                    key.decode() if key else headers.get("key") or None,
                    payload.decode() if payload is not None else "",
                    None,
                    headers,
                    otopic.decode() if otopic is not None else "",
                )
            )
        except (ValueError, UnicodeDecodeError, AttributeError, TypeError):
            out.append(letter_from_entry(entry_id, raw))  # the careful path decides
    return out


def parse_records(raw: Any) -> list[ReplayRecord]:
    """Replay records stored as a JSON list (lenient: bad JSON reads as no records)."""
    import json

    if not raw:
        return []
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return []
    out = []
    for r in data if isinstance(data, list) else []:
        if not isinstance(r, dict):
            continue
        try:
            out.append(
                ReplayRecord(
                    dlq_id=str(r.get("dlq_id", "")),
                    new_id=str(r.get("new_id", "")),
                    topic=str(r.get("topic", "")),
                    partition=int(r.get("partition", -1)),
                    at_ms=int(r.get("at_ms", 0)),
                    by=str(r.get("by", "")),
                    forced=bool(r.get("forced", False)),
                )
            )
        except (TypeError, ValueError):
            continue
    return out


def _matches(
    letter: DlqLetter,
    partition: int | None,
    key: str | None,
    text: str | None,
) -> bool:
    if partition is not None and letter.partition != partition:
        return False
    if key is not None and letter.key != key:
        return False
    if text:
        needle = text.lower()
        if needle in letter.payload.lower():
            return True
        return any(needle in k.lower() or needle in v.lower() for k, v in letter.headers.items())
    return True


class DeadLetters:
    """The DLQ of every topic of one deployment (see module docstring for replay routing)."""

    def __init__(self, config: MQConfig, client: RedisClient | None = None) -> None:
        self.config = config
        self.keys: KeySpace = config.keys
        self.client: RedisClient = client if client is not None else config.client()
        self._counts: dict[str, tuple[int, float]] = {}
        self._keys_cache: dict[tuple[str, str, int], list[str]] = {}
        self._wire = Wire(self.client, 1, "read dead letters")

    # --- reading ---------------------------------------------------------------------------
    def _check_topic(self, topic: str) -> None:
        validate_topic(topic)
        with redis_errors(f"read topic {topic}"):
            known = self.client.sismember(self.keys.registry(), topic)
        if not known:
            raise UnknownTopicError(f"unknown topic {topic!r}")

    def depth(self, topic: str) -> int:
        self._check_topic(topic)
        with redis_errors(f"read DLQ of {topic}"):
            return int(self.client.xlen(self.keys.dlq(topic)))

    def page(
        self,
        topic: str,
        *,
        before: str | None = None,
        limit: int = 50,
        partition: int | None = None,
        key: str | None = None,
        text: str | None = None,
        since_ms: int | None = None,
        until_ms: int | None = None,
        max_scan: int = 20000,
    ) -> DlqPage:
        """Newest letters first; pass ``next_cursor`` as ``before`` for the next page.

        Filters scan at most ``max_scan`` letters (``complete=False`` and a cursor
        to continue when the bound stops it); the time range maps to an id range.
        """
        if not 1 <= limit <= 1000 or max_scan < 1:
            raise InvalidArgumentError("limit must be 1..1000 and max_scan >= 1")
        if before is not None:
            validate_id(before)
        validate_topic(topic)
        hi = "+" if until_ms is None else f"{_ms(until_ms)}-{_U64}"
        if before is not None and (hi == "+" or id_tuple(before) <= id_tuple(hi)):
            hi = "(" + before
        lo = "-" if since_ms is None else f"{_ms(since_ms)}-0"
        filtering = partition is not None or key is not None or bool(text)
        chunk = limit if not filtering else min(1000, max(200, limit * 4))
        letters: list[DlqLetter] = []
        scanned = 0
        dlq = self.keys.dlq(topic)
        last_scanned: str | None = None
        exhausted = False
        while len(letters) < limit and scanned < max_scan:
            want = min(chunk, max_scan - scanned)
            # the wire read: replies as Redis sends them (flat field lists), which
            # letters_from_entries decodes in about the time Redis takes to send them
            [entries] = self._wire.run([("XREVRANGE", dlq, hi, lo, "COUNT", want)])
            if isinstance(entries, Exception):
                with redis_errors(f"read DLQ of {topic}"):
                    raise entries
            scanned += len(entries)
            for letter in letters_from_entries(entries):
                last_scanned = letter.id
                if not filtering or _matches(letter, partition, key, text):
                    letters.append(letter)
                    if len(letters) == limit:
                        break
            if len(entries) < want:
                exhausted = True
                break
            if last_scanned is not None:
                hi = "(" + last_scanned
        if scanned == 0:
            self._check_topic(topic)  # an empty page may mean an unknown topic
        if len(letters) == limit:
            cursor: str | None = letters[-1].id
            complete = True
        elif exhausted:
            cursor, complete = None, True
        else:
            cursor, complete = last_scanned, False
        return DlqPage(letters=letters, next_cursor=cursor, scanned=scanned, complete=complete)

    def get(self, topic: str, dlq_id: str) -> DlqLetter:
        """One letter with its replay records; UnknownMessageError when it does not exist."""
        validate_id(dlq_id)
        self._check_topic(topic)
        with redis_errors(f"read letter {dlq_id}"):
            pipe = self.client.pipeline(transaction=False)
            pipe.xrange(self.keys.dlq(topic), dlq_id, dlq_id, 1)
            pipe.hget(self.keys.dlq_replays(topic), dlq_id)
            found, raw = pipe.execute()
        if not found:
            raise UnknownMessageError(f"no dead letter {dlq_id} in topic {topic!r}")
        letter = letter_from_entry(*found[0])
        return DlqLetter(
            **{f: getattr(letter, f) for f in DlqLetter.__dataclass_fields__ if f != "replays"},
            replays=parse_records(raw),
        )

    def ids_matching(
        self,
        topic: str,
        *,
        partition: int | None = None,
        key: str | None = None,
        text: str | None = None,
        since_ms: int | None = None,
        until_ms: int | None = None,
        max_ids: int = 1_000_000,
    ) -> list[str]:
        """Ids of the letters matching the filters, oldest first (freezes a bulk-replay set)."""
        self._check_topic(topic)
        lo = "-" if since_ms is None else f"{_ms(since_ms)}-0"
        hi = "+" if until_ms is None else f"{_ms(until_ms)}-{_U64}"
        filtering = partition is not None or key is not None or bool(text)
        dlq = self.keys.dlq(topic)
        out: list[str] = []
        while len(out) < max_ids:
            with redis_errors(f"read DLQ of {topic}"):
                entries = self.client.xrange(dlq, lo, hi, _SCAN_PAGE)
            for entry_id, fields in entries:
                if filtering:
                    if _matches(letter_from_entry(entry_id, fields), partition, key, text):
                        out.append(decode_text(entry_id))
                else:
                    out.append(decode_text(entry_id))
                if len(out) >= max_ids:
                    break
            if len(entries) < _SCAN_PAGE:
                break
            lo = "(" + decode_text(entries[-1][0])
        return out

    def replays(self, topic: str, dlq_id: str) -> list[ReplayRecord]:
        validate_id(dlq_id)
        validate_topic(topic)
        with redis_errors(f"read replay records of {dlq_id}"):
            return parse_records(self.client.hget(self.keys.dlq_replays(topic), dlq_id))

    def followups(self, topic: str, dlq_id: str) -> list[dict[str, Any]]:
        """What happened to each replay: consumed by every group, or dead-lettered again.

        ``consumed`` means every group of the target partition has delivered the
        new entry and none still has it pending; ``failed_again`` lists newer
        letters carrying ``x-replayed-from-dlq`` = this letter (bounded scan).
        """
        records = self.replays(topic, dlq_id)
        out: list[dict[str, Any]] = []
        for rec in records:
            key = self.keys.partition(rec.topic, rec.partition)
            with redis_errors("read replay follow-up"):
                exists = bool(self.client.xrange(key, rec.new_id, rec.new_id, 1))
                try:
                    groups = self.client.xinfo_groups(key)
                except redis.ResponseError:
                    groups = []
                states = []
                for g in groups:
                    name = decode_text(g["name"])
                    delivered = id_tuple(decode_text(g["last-delivered-id"])) >= id_tuple(
                        rec.new_id
                    )
                    pending = bool(self.client.xpending_range(key, name, rec.new_id, rec.new_id, 1))
                    states.append({"group": name, "delivered": delivered, "pending": pending})
                again = self._failed_again(rec.topic, dlq_id, rec.new_id)
            out.append(
                {
                    "new_id": rec.new_id,
                    "topic": rec.topic,
                    "partition": rec.partition,
                    "at_ms": rec.at_ms,
                    "by": rec.by,
                    "exists": exists,
                    "groups": states,
                    "consumed": bool(states)
                    and all(s["delivered"] and not s["pending"] for s in states),
                    "failed_again": again,
                }
            )
        return out

    def _failed_again(self, topic: str, dlq_id: str, new_id: str) -> list[str]:
        dlq = self.keys.dlq(topic)
        lo = new_id
        found: list[str] = []
        scanned = 0
        while scanned < _FOLLOWUP_SCAN:
            entries = self.client.xrange(dlq, lo, "+", _SCAN_PAGE)
            scanned += len(entries)
            for entry_id, fields in entries:
                headers = parse_headers(decode_fields(fields).get("headers"))
                if headers.get(REPLAYED_HEADER) == dlq_id:
                    found.append(decode_text(entry_id))
            if len(entries) < _SCAN_PAGE:
                break
            lo = "(" + decode_text(entries[-1][0])
        return found

    # --- replay -----------------------------------------------------------------------------
    def replay(
        self,
        topic: str,
        dlq_id: str,
        *,
        by: str = "",
        force: bool = False,
        target_topic: str | None = None,
        target_partition: int | None = None,
    ) -> ReplayResult:
        """Replay one letter (see module docstring); UnknownMessageError when it does not exist."""
        result = self.replay_many(
            topic,
            [dlq_id],
            by=by,
            force=force,
            target_topic=target_topic,
            target_partition=target_partition,
        )[0]
        if result.reason == "missing":
            raise UnknownMessageError(f"no dead letter {dlq_id} in topic {topic!r}")
        return result

    def replay_many(
        self,
        topic: str,
        ids: Sequence[str],
        *,
        by: str = "",
        force: bool = False,
        target_topic: str | None = None,
        target_partition: int | None = None,
    ) -> list[ReplayResult]:
        """Replay letters, ``REPLAY_BATCH`` per atomic script call; one result per id."""
        return self._run(topic, ids, by, force, target_topic, target_partition, dry=False)

    def plan(
        self,
        topic: str,
        ids: Sequence[str],
        *,
        target_topic: str | None = None,
        target_partition: int | None = None,
    ) -> list[ReplayResult]:
        """Dry run: where each letter would go, and which would be skipped. Writes nothing."""
        return self._run(topic, ids, "", False, target_topic, target_partition, dry=True)

    def _target_count(self, target: str, refresh: bool) -> int:
        cached = self._counts.get(target)
        if cached and not refresh and time.monotonic() - cached[1] < _META_TTL_S:
            return cached[0]
        with redis_errors(f"read topic {target}"):
            pipe = self.client.pipeline(transaction=False)
            pipe.sismember(self.keys.registry(), target)
            pipe.hget(self.keys.meta(target), "partitionCount")
            known, raw = pipe.execute()
        if not known:
            raise UnknownTopicError(f"unknown topic {target!r}")
        count = partition_count_from_meta(raw)
        self._counts[target] = (count, time.monotonic())
        return count

    def _script_keys(self, topic: str, target: str, count: int) -> list[str]:
        cache_key = (topic, target, count)
        keys = self._keys_cache.get(cache_key)
        if keys is None:
            keys = [
                self.keys.dlq(topic),
                self.keys.dlq_replays(topic),
                self.keys.meta(target),
                *(self.keys.partition(target, p) for p in range(count)),
            ]
            if len(self._keys_cache) > 1000:
                self._keys_cache.clear()
            self._keys_cache[cache_key] = keys
        return keys

    def _run(
        self,
        topic: str,
        ids: Sequence[str],
        by: str,
        force: bool,
        target_topic: str | None,
        target_partition: int | None,
        *,
        dry: bool,
    ) -> list[ReplayResult]:
        validate_topic(topic)
        ids = [validate_id(i) for i in ids]
        target = validate_topic(target_topic) if target_topic is not None else topic
        if not isinstance(by, str):
            raise InvalidArgumentError("'by' must be a string")
        if target != topic:
            self._check_topic(topic)
            if self.config.keys.hash_tags and self.config.cluster:
                raise InvalidArgumentError(
                    "replay to another topic is not atomic across hash slots on Redis Cluster"
                )
        count = self._target_count(target, refresh=False)
        if target_partition is not None and not 0 <= target_partition < count:
            raise UnknownPartitionError(
                f"topic {target!r} has partitions 0..{count - 1}, not {target_partition}"
            )
        out: list[ReplayResult] = []
        for start in range(0, len(ids), REPLAY_BATCH):
            chunk = ids[start : start + REPLAY_BATCH]
            for _attempt in range(3):
                now = int(time.time() * 1000)
                keys = self._script_keys(topic, target, count)
                args = [
                    now,
                    iso_from_ms(now),
                    by,
                    "1" if force else "0",
                    target,
                    -1 if target_partition is None else target_partition,
                    "1" if dry else "0",
                    *chunk,
                ]
                reply = call_script(self.client, "replay_letters", keys, args)
                if reply and reply[0] == b"stale":
                    count = self._target_count(target, refresh=True)
                    continue
                out.extend(_result(row, target) for row in reply)
                break
            else:
                raise InvalidArgumentError(f"partition count of {target!r} keeps changing")
        return out

    # --- deleting ----------------------------------------------------------------------------
    def delete(self, topic: str, dlq_id: str) -> bool:
        """Delete one letter (its replay records are kept as history)."""
        validate_id(dlq_id)
        self._check_topic(topic)
        with redis_errors(f"delete letter {dlq_id}"):
            return bool(self.client.xdel(self.keys.dlq(topic), dlq_id))

    def purge(self, topic: str) -> int:
        """Remove every letter and replay record of a topic (UNLINK: freed off the main thread)."""
        self._check_topic(topic)
        with redis_errors(f"purge DLQ of {topic}"):
            count = int(self.client.xlen(self.keys.dlq(topic)))
            self.client.unlink(self.keys.dlq(topic))
            self.client.unlink(self.keys.dlq_replays(topic))
        return count


def _ms(value: int) -> int:
    if not isinstance(value, int) or value < 0:
        raise InvalidArgumentError(f"times are epoch milliseconds >= 0, not {value!r}")
    return value


def _result(row: list[Any], target: str) -> ReplayResult:
    dlq_id, status, new_id, partition = (decode_text(row[0]), decode_text(row[1]), row[2], row[3])
    new = decode_text(new_id) or None
    return ReplayResult(
        replayed=status in ("replayed", "forced"),
        new_id=new,
        topic=target,
        partition=int(partition) if int(partition) >= 0 else None,
        reason=status,
        dlq_id=dlq_id,
    )
