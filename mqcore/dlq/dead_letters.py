"""The dead letters of one deployment: browse, filter, get, replay, delete, purge.

:class:`DeadLetters` is the API; reading a page and follow-ups live in
:mod:`.browse`, the replay batches in :mod:`.replay` and the decoding of entries
in :mod:`.letters`. Replay routing is described in :mod:`mqcore.dlq`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from mqcore.boundary import redis_errors
from mqcore.codec import DecodeBudget, validate_id
from mqcore.config import MQConfig, RedisClient
from mqcore.dlq.browse import matching_ids, read_page, replay_followups
from mqcore.dlq.letters import letter_from_entry, parse_records
from mqcore.dlq.replay import Replayer
from mqcore.errors import InvalidArgumentError, UnknownMessageError, UnknownTopicError
from mqcore.keys import KeySpace
from mqcore.letter_payloads import delete_all, delete_ids
from mqcore.models import DlqLetter, DlqPage, ReplayRecord, ReplayResult
from mqcore.payloads import unlinks_owned_payloads
from mqcore.validate import validate_topic
from mqcore.wire import Wire


class DeadLetters:
    """The DLQ of every topic of one deployment (replay routing: see :mod:`mqcore.dlq`)."""

    def __init__(self, config: MQConfig, client: RedisClient | None = None) -> None:
        self.config = config
        self.keys: KeySpace = config.keys
        self.client: RedisClient = client if client is not None else config.client()
        self._wire = Wire(self.client, 1, "read dead letters")
        replay_wire = Wire(self.client, 1, "replay dead letters", translate=False)
        self._replayer = Replayer(self.client, self.keys, replay_wire)
        # on java-kryo a Java service's letters share the entry's payload key: never unlinked
        self._unlink = unlinks_owned_payloads(config.encoding)

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
        max_scan_bytes: int | None = None,
    ) -> DlqPage:
        """Newest letters first; pass ``next_cursor`` as ``before`` for the next page.

        Filters scan at most ``max_scan`` letters and, when given, about
        ``max_scan_bytes`` bytes (``complete=False`` and a cursor to continue when a
        bound stops it); the time range maps to an id range.
        """
        return read_page(
            self._wire,
            self.keys,
            self._check_topic,
            topic,
            before=before,
            limit=limit,
            partition=partition,
            key=key,
            text=text,
            since_ms=since_ms,
            until_ms=until_ms,
            max_scan=max_scan,
            max_scan_bytes=max_scan_bytes,
            decode=self.config.decode_budget(),
        )

    def get(self, topic: str, dlq_id: str, *, decode: DecodeBudget | None = None) -> DlqLetter:
        """One letter with its replay records; UnknownMessageError when it does not exist.
        ``decode``: the budget of the page it is on (several letters share one), else a
        fresh one."""
        validate_id(dlq_id)
        self._check_topic(topic)
        with redis_errors(f"read letter {dlq_id}"):
            pipe = self.client.pipeline(transaction=False)
            pipe.xrange(self.keys.dlq(topic), dlq_id, dlq_id, 1)
            pipe.hget(self.keys.dlq_replays(topic), dlq_id)
            found, raw = pipe.execute()
        if not found:
            raise UnknownMessageError(f"no dead letter {dlq_id} in topic {topic!r}")
        entry_id, raw_fields = found[0]
        letter = letter_from_entry(entry_id, raw_fields, decode or self.config.decode_budget())
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
        return matching_ids(
            self.client,
            self.keys,
            topic,
            partition=partition,
            key=key,
            text=text,
            since_ms=since_ms,
            until_ms=until_ms,
            max_ids=max_ids,
            max_decode_bytes=self.config.max_decode_bytes,
        )

    def replays(self, topic: str, dlq_id: str) -> list[ReplayRecord]:
        validate_id(dlq_id)
        validate_topic(topic)
        with redis_errors(f"read replay records of {dlq_id}"):
            return parse_records(self.client.hget(self.keys.dlq_replays(topic), dlq_id))

    def followups(
        self, topic: str, dlq_id: str, *, visible: Callable[[str], bool] | None = None
    ) -> list[dict[str, Any]]:
        """What happened to each replay: consumed by every group, or dead-lettered again.

        ``consumed`` means every group of the target partition has delivered the
        new entry and none still has it pending; ``failed_again`` lists the letters
        that replay became (``x-replayed-from-dlq`` = this letter, matched to the
        replay by ``x-replay-seq``; bounded scan).
        Replays into a topic ``visible`` refuses are listed as ``hidden``: nothing of
        that topic is read.
        """
        records = self.replays(topic, dlq_id)
        return replay_followups(
            self.client, self.keys, dlq_id, records, visible=visible,
            max_decode_bytes=self.config.max_decode_bytes,
        )  # fmt: skip

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
        """Replay one letter (see :mod:`mqcore.dlq`); UnknownMessageError when it does not exist."""
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
        return self._replayer.run(
            topic, ids, target, by=by, force=force, target_partition=target_partition, dry=dry
        )

    # --- deleting ----------------------------------------------------------------------------
    def delete(self, topic: str, dlq_id: str) -> bool:
        """Delete one letter and the out-of-line payload key it owns, not on java-kryo (its
        replay records are kept as history)."""
        validate_id(dlq_id)
        self._check_topic(topic)
        return bool(delete_ids(self.client, self.keys, topic, [dlq_id], unlink=self._unlink))

    def purge(self, topic: str) -> int:
        """Remove every letter, with the payload keys they own, and the replay records of a
        topic: letters are deleted a page at a time (``delete_letters.lua``), then the DLQ key
        and the records are UNLINKed (freed off the main thread)."""
        self._check_topic(topic)
        count = delete_all(self.client, self.keys, topic, unlink=self._unlink)
        with redis_errors(f"purge DLQ of {topic}"):
            count += int(self.client.xlen(self.keys.dlq(topic)))
            self.client.unlink(self.keys.dlq(topic))
            self.client.unlink(self.keys.dlq_replays(topic))
        return count
