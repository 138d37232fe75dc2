"""``RetrySet``: browse a topic's retry set, retry items now, delete them.

Retry now is the retry mover's move (:meth:`mqcore.retry.RetryMover.move_items`,
``move_retries.lua``) with the due check lifted: each item still in the set goes
back to its partition (``timestamp`` now, the other fields copied) and leaves the set,
atomically per call. Delete is ``delete_retries.lua`` (ZREM, then DEL of the hash,
only for members still in the set). Both take at most :data:`BATCH` items per script
call, validate every id before the first write (a bad id writes nothing), and are
idempotent: an item already gone is counted as ``missing``.

"All matching a filter" walks the filtered list with its cursor and acts on each
page; one call acts on at most ``max_items`` items and says whether more may match
(``more``, ``next_cursor``), so no request runs unbounded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from mqcore import clock
from mqcore.admin import Admin
from mqcore.boundary import redis_errors
from mqcore.codec import DecodeBudget
from mqcore.config import MQConfig, RedisClient
from mqcore.errors import InvalidArgumentError, UnknownMessageError
from mqcore.payloads import owned_prefix
from mqcore.retries.browse import RetryFilter, read_page
from mqcore.retries.items import RetryItem, RetryPage, item_from_hash, validate_item_id
from mqcore.retry import RetryMover
from mqcore.scripts import call_script
from mqcore.validate import validate_topic

__all__ = ["BATCH", "MAX_IDS", "MAX_MATCHING", "RetryOutcome", "RetrySet"]

BATCH = 100  # items per script call
MAX_IDS = 1000  # ids named in one call
MAX_MATCHING = 10_000  # items one "all matching" call acts on
MAX_MATCHING_SCAN = 100_000  # members one "all matching" call looks at


@dataclass(slots=True)
class RetryOutcome:
    """What one retry-now or delete call did (counts add up to ``requested``)."""

    requested: int = 0
    retried: int = 0  # re-added to their partition
    dropped: int = 0  # removed without a re-add: the item names no topic (as Java)
    deleted: int = 0
    skipped: int = 0  # left in place: another topic's slot, or a hash not in plain fields
    missing: int = 0  # no longer in the retry set (moved, deleted, never there)
    more: bool = False  # "all matching": more items may match after next_cursor
    next_cursor: str | None = None
    ids: list[str] = field(default_factory=list)  # the ids acted on (matching calls)

    def add(self, other: RetryOutcome) -> None:
        for name in ("requested", "retried", "dropped", "deleted", "skipped", "missing"):
            setattr(self, name, getattr(self, name) + getattr(other, name))


def _clean_ids(ids: Iterable[str]) -> list[str]:
    if isinstance(ids, str):
        raise InvalidArgumentError("ids: a list of retry item ids")
    cleaned = list(dict.fromkeys(validate_item_id(i) for i in ids))
    if not cleaned:
        raise InvalidArgumentError("name at least one retry item")
    if len(cleaned) > MAX_IDS:
        raise InvalidArgumentError(f"at most {MAX_IDS} retry items per call")
    return cleaned


class RetrySet:
    """A deployment's retry sets (one zset and its item hashes per topic)."""

    def __init__(self, config: MQConfig, client: RedisClient | None = None) -> None:
        self.config = config
        self.keys = config.keys
        self.client = client if client is not None else config.client()
        self.admin = Admin(config, client=self.client)

    def page(
        self,
        topic: str,
        *,
        flt: RetryFilter | None = None,
        limit: int = 50,
        cursor: str | None = None,
        offset: int = 0,
        now_ms: int | None = None,
        max_scan: int = 5000,
    ) -> RetryPage:
        """One page of ``topic``'s items by due time (UnknownTopicError for an unknown topic
        with no retry set)."""
        validate_topic(topic)
        page = read_page(
            self.client,
            self.keys,
            topic,
            flt=flt or RetryFilter(),
            now_ms=clock.now_ms() if now_ms is None else now_ms,
            limit=limit,
            cursor=cursor,
            offset=offset,
            max_scan=max_scan,
            budget=self.config.decode_budget(),
        )
        if not page.total:
            self.admin.partition_count(topic)
        return page

    def get(self, topic: str, item_id: str) -> RetryItem:
        """One item of the set, or UnknownMessageError."""
        validate_topic(topic)
        member = self.keys.retry_item(topic, validate_item_id(item_id))
        with redis_errors(f"read retry item {item_id}"):
            pipe = self.client.pipeline(transaction=False)
            pipe.zscore(self.keys.retry_zset(topic), member)
            pipe.hgetall(member)
            score, raw = pipe.execute()
        if score is None:
            raise UnknownMessageError(f"no retry item {item_id!r} in the retry set of {topic!r}")
        return item_from_hash(item_id, int(score), raw, self.config.decode_budget())

    def retry_now(self, topic: str, ids: Iterable[str]) -> RetryOutcome:
        """Put the named items back on their partitions now, whatever their due time."""
        return self._act(topic, _clean_ids(ids), self._retry_batch)

    def delete(self, topic: str, ids: Iterable[str]) -> RetryOutcome:
        """Delete the named items (hash and set member)."""
        return self._act(topic, _clean_ids(ids), self._delete_batch)

    def retry_matching(self, topic: str, flt: RetryFilter, **kw: Any) -> RetryOutcome:
        return self._matching(topic, flt, self._retry_batch, **kw)

    def delete_matching(self, topic: str, flt: RetryFilter, **kw: Any) -> RetryOutcome:
        return self._matching(topic, flt, self._delete_batch, **kw)

    # --- internals ----------------------------------------------------------------------
    def _act(
        self, topic: str, ids: list[str], batch: Callable[[str, list[str]], RetryOutcome]
    ) -> RetryOutcome:
        self.admin.partition_count(topic)  # unknown topic: nothing written
        out = RetryOutcome()
        for i in range(0, len(ids), BATCH):
            out.add(batch(topic, ids[i : i + BATCH]))
        return out

    def _retry_batch(self, topic: str, ids: list[str]) -> RetryOutcome:
        members = [self.keys.retry_item(topic, i) for i in ids]
        with redis_errors(f"read retry items of {topic!r}"):
            pipe = self.client.pipeline(transaction=False)
            for member in members:
                pipe.hlen(member)
                pipe.hexists(member, "topic")
            replies = pipe.execute(raise_on_error=False)
        # a hash without a plain "topic" field (Kryo-written) would be dropped by the move
        # as Java's mover drops it; an operator's retry leaves it for a look instead, and
        # a key that is no hash at all (odd data: an error reply) too
        plain = [
            m
            for k, m in enumerate(members)
            if not isinstance(replies[2 * k], Exception)
            and not isinstance(replies[2 * k + 1], Exception)
            and (not replies[2 * k] or replies[2 * k + 1])
        ]
        mover = RetryMover(self.config, self.client, batch=BATCH)
        stats = mover.move_items(topic, plain, force=True)
        skipped = stats.skipped + len(members) - len(plain)
        missing = len(ids) - stats.moved - stats.dropped - skipped
        return RetryOutcome(len(ids), stats.moved, stats.dropped, 0, skipped, missing)

    def _delete_batch(self, topic: str, ids: list[str]) -> RetryOutcome:
        keys = [self.keys.retry_zset(topic), *(self.keys.retry_item(topic, i) for i in ids)]
        with redis_errors(f"delete retry items of {topic!r}"):
            own = owned_prefix(self.config.encoding, self.keys.payload_topic_prefix(topic))
            payloads = [own, self.keys.payload_index(topic)]
            deleted = int(call_script(self.client, "delete_retries", keys, payloads))
        return RetryOutcome(len(ids), deleted=deleted, missing=len(ids) - deleted)

    def _matching(
        self,
        topic: str,
        flt: RetryFilter,
        batch: Callable[[str, list[str]], RetryOutcome],
        *,
        cursor: str | None = None,
        max_items: int = MAX_MATCHING,
        now_ms: int | None = None,
    ) -> RetryOutcome:
        if isinstance(max_items, bool) or not 1 <= max_items <= MAX_MATCHING:
            raise InvalidArgumentError(f"max_items must be 1..{MAX_MATCHING}")
        self.admin.partition_count(topic)
        now = clock.now_ms() if now_ms is None else now_ms
        out, scanned = RetryOutcome(), 0
        cap = DecodeBudget.cap_only(self.config.max_decode_bytes)
        while True:
            want = min(BATCH, max_items - out.requested)
            page = read_page(
                self.client, self.keys, topic, flt=flt, now_ms=now, limit=want, cursor=cursor,
                budget=cap,  # the filter sees what the pages show
            )  # fmt: skip
            ids = [i.id for i in page.items if i.actionable]
            if ids:
                out.add(batch(topic, ids))
                out.ids += ids
            cursor, scanned = page.next_cursor, scanned + page.scanned
            if cursor is None or out.requested >= max_items or scanned >= MAX_MATCHING_SCAN:
                break
        out.more, out.next_cursor = cursor is not None, cursor
        return out
