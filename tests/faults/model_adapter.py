"""Every call the nothing-is-lost model makes into mqcore, in one class (R19).

The model (``tests/faults/test_nothing_lost_model.py``) drives a topic the way its users
do: a producer, consumers that hold leases and ack under an ack-delete policy, the retry
mover, dead letters and their replay, operator position moves, the housekeeper, an
operator's ``topic trim``, a Spark-style pipeline that commits through its checkpoint
records, and Java's housekeeper re-stated. It reads back what is in Redis to check that
nothing a reader still needs is gone. When an mqcore signature changes, this module is the
one place to adapt.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mqcore import acks
from mqcore.admin import Admin
from mqcore.admin.position_target import PositionTarget
from mqcore.checkpoints import CheckpointStore, Writer
from mqcore.codec import decode_text, id_tuple
from mqcore.config import MQConfig
from mqcore.consumer.entries import decode_message, stored_fields
from mqcore.consumer.reclaim import claim_pending
from mqcore.dlq import DeadLetters, letter_from_entry
from mqcore.leases import Lease, LeaseManager
from mqcore.payloads import PAYLOAD_HASH_REF, fetch_payload, is_out_of_line
from mqcore.producer import Producer
from mqcore.retention.policy import RetentionPolicy
from mqcore.retention.trim import trim_partition, trim_topic
from mqcore.retention.view import frontier_ids
from mqcore.retry import RetryMover
from mqcore.topics import Topics

TOPIC = "orders"
PARTITIONS = 2
GROUPS = ("g1", "g2")  # consumer groups: leases, acks under an ack-delete policy
PIPELINE = "totals"  # the pipeline's group: no lease, moved by its checkpoint commits
TAG = "x-model-tag"  # header naming the produced message an entry carries
INLINE_BYTES = 64  # payloads longer than this go out of line (a small limit: fast histories)
LEASE_TTL_MS = 60_000  # a lease "expires" when the model deletes it (the TTL passing)

Fields = dict[Any, Any]


def id_after(a: str, b: str) -> bool:
    """``a > b`` as stream ids."""
    return id_tuple(a) > id_tuple(b)


def model_config(url: str, encoding: str) -> MQConfig:
    """The deployment's settings: the defaults (the payload TTL among them) but for a small
    inline limit."""
    return MQConfig.from_url(url, inline_payload_bytes=INLINE_BYTES, encoding=encoding)


@dataclass
class Holder:
    """One consumer process of a group: its name and the leases it took."""

    group: str
    name: str
    leases: dict[int, Lease] = field(default_factory=dict)


@dataclass(frozen=True)
class Resolved:
    """An entry, retry item or letter as a reader gets it: its tag and payload (None: the
    payload is gone or its reference was refused)."""

    tag: str | None
    payload: str | None
    out_of_line: bool
    expires_in_ms: int | None = None  # the payload key's TTL (None: it never expires)


class MQ:
    """The model's hands and eyes on one MQ deployment (a real redis-server)."""

    def __init__(self, url: str, *, encoding: str) -> None:
        self.config = model_config(url, encoding)
        self.keys = self.config.keys
        self.r = self.config.client()
        self.producer = Producer(self.config, self.r, cache_ttl_s=3600)
        self.admin = Admin(self.config, self.r)
        self.letters_api = DeadLetters(self.config, self.r)
        self.mover = RetryMover(self.config, self.r)
        self.store = CheckpointStore(self.config, self.r)
        self.batch = 0

    def close(self) -> None:
        self.r.close()

    def stream(self, p: int) -> str:
        return self.keys.partition(TOPIC, p)

    # --- setup and producing -------------------------------------------------------------
    def create_topic(self) -> None:
        Topics(self.config, self.r).create(TOPIC, PARTITIONS, groups=(*GROUPS, PIPELINE))

    def produce(self, p: int, payload: str, tag: str) -> str:
        return self.producer.send(TOPIC, payload, headers={TAG: tag}, partition=p).id

    # --- consumers ------------------------------------------------------------------------
    def acquire(self, holder: Holder, p: int) -> Lease | None:
        manager = LeaseManager(
            self.r, self.keys, topic=TOPIC, group=holder.group, owner=holder.name,
            ttl_ms=LEASE_TTL_MS,
        )  # fmt: skip
        return manager.acquire(p)

    def release(self, holder: Holder, lease: Lease) -> None:
        manager = LeaseManager(
            self.r, self.keys, topic=TOPIC, group=holder.group, owner=holder.name,
            ttl_ms=LEASE_TTL_MS,
        )  # fmt: skip
        manager.release(lease)

    def expire_lease(self, group: str, p: int) -> None:
        """The lease TTL passes (its holder died and stopped renewing)."""
        self.r.delete(self.keys.lease(TOPIC, group, p))

    def read_new(self, holder: Holder, p: int, count: int) -> list[tuple[str, Fields]]:
        """XREADGROUP ``>`` as the consumer's worker reads."""
        reply = self.r.xreadgroup(holder.group, holder.name, {self.stream(p): ">"}, count=count)
        return [(decode_text(i), f) for i, f in (reply[0][1] if reply else [])]

    def reclaim(self, holder: Holder, p: int) -> tuple[list[tuple[str, Fields]], list[str]]:
        """A new holder claims every pending entry of its group on ``p`` (after the grace)."""
        entries: list[tuple[str, Fields]] = []
        deleted: list[str] = []
        pages = claim_pending(
            self.r, self.stream(p), holder.group, holder.name, min_idle_ms=0,
            keep_going=lambda: True,
        )  # fmt: skip
        for page in pages:
            entries += [(decode_text(i), f) for i, f in page.entries]
            deleted += page.deleted
        return entries, deleted

    def ack(self, holder: Holder, lease: Lease, ids: Sequence[str], policy: str) -> int:
        """The worker's fenced ack (FencedError when a newer holder took the partition)."""
        return acks.ack(
            self.r, self.keys, topic=TOPIC, group=holder.group, partition=lease.partition,
            ids=ids, epoch=lease.epoch, policy=policy, owner=lease.owner,
            frontier=self.config.encoding,
        )  # fmt: skip

    def retry(
        self, holder: Holder, lease: Lease, entry_id: str, raw: Fields, direct: bool, policy: str
    ) -> str:
        """The handler failed: ack and schedule a retry (due now), as the worker does; the
        retry item's key, or with ``direct`` the id of the entry added back at once."""
        fields = stored_fields(decode_message(TOPIC, lease.partition, entry_id, raw))
        result = acks.schedule_retry(
            self.r,
            self.keys,
            acks.PendingEntry(
                TOPIC, holder.group, lease.partition, entry_id, lease.epoch, lease.owner
            ),
            fields=fields,
            due_ms=0,
            direct=direct,
            policy=policy,
            encoding=self.config.encoding,
        )
        return result if direct else self.keys.retry_item(TOPIC, result)

    def dead_letter(
        self, holder: Holder, lease: Lease, entry_id: str, raw: Fields, policy: str
    ) -> str | None:
        fields = stored_fields(decode_message(TOPIC, lease.partition, entry_id, raw))
        return acks.dead_letter(
            self.r,
            self.keys,
            acks.PendingEntry(
                TOPIC, holder.group, lease.partition, entry_id, lease.epoch, lease.owner
            ),
            reason="model: handler gave up",
            fields=fields,
            encoding=self.config.encoding,
            policy=policy,
        )

    # --- retries, letters --------------------------------------------------------------------
    def move_retries(self) -> int:
        return self.mover.move_due(TOPIC)

    def retry_items(self) -> dict[str, Fields]:
        """Every item in the retry zset, with its hash (empty when the hash is gone)."""
        members = [decode_text(m) for m in self.r.zrange(self.keys.retry_zset(TOPIC), 0, -1)]
        return {m: self.r.hgetall(m) for m in members}

    def replay(self, dlq_id: str, target: int) -> tuple[int, str]:
        result = self.letters_api.replay(TOPIC, dlq_id, force=True, target_partition=target)
        if not result.new_id or result.partition is None:
            raise AssertionError(f"replay of letter {dlq_id} wrote nothing: {result}")
        return result.partition, result.new_id

    # --- operators -------------------------------------------------------------------------
    def move(self, group: str, p: int, kind: str, value: str | None = None) -> str:
        """Move ``group`` on ``p``; returns its new last-delivered id."""
        plan = self.admin.set_position(TOPIC, group, PositionTarget.of(kind, value), [p])
        return plan.moves[0].target_id

    def housekeep(self, p: int, rule: str, n: int, now_ms: int) -> int:
        """mqcore's housekeeper with one rule on one partition; ``now_ms`` is the clock
        (far ahead for the age rule, so every entry is old enough)."""
        policy = {
            "maxlen": RetentionPolicy.build(maxlen=n),
            "max_age": RetentionPolicy.build(max_age=1),
            "consumed": RetentionPolicy.build(consumed=True),
        }[rule]
        return trim_partition(self.r, self.keys, TOPIC, p, policy, at_ms=now_ms).deleted

    def topic_trim(self, maxlen: int) -> int:
        """An operator's ``mqcore topic trim --maxlen``."""
        return trim_topic(Topics(self.config, self.r), TOPIC, maxlen=maxlen)

    def java_housekeeper(self, p: int) -> None:
        """Java's StreamRetentionHousekeeper, re-stated: XTRIM MINID at the lowest commit
        frontier of the groups holding a live lease on the partition (exact: a trim of
        whole nodes deletes a part of what this deletes)."""
        frontiers = frontier_ids(self.r.hgetall(self.keys.commit_frontier(TOPIC, p)))
        live = [f for g, f in frontiers.items() if self.r.exists(self.keys.lease(TOPIC, g, p))]
        if live:
            lowest = min(live, key=id_tuple)
            self.r.xtrim(self.stream(p), minid=lowest, approximate=False)

    # --- the pipeline ----------------------------------------------------------------------
    def pipeline_read(self, p: int, after: str, count: int) -> list[tuple[str, Fields]]:
        """The Spark source's read of a batch: XRANGE after the committed position."""
        return [
            (decode_text(i), f) for i, f in self.r.xrange(self.stream(p), f"({after}", "+", count)
        ]

    def pipeline_commit(self, p: int, upto: str, records: int) -> None:
        """The sink's exactly-once commit of a batch: the checkpoint record and the group's
        position in one script (no lease is held)."""
        kw: dict[str, Any] = {"topic": TOPIC, "sink": "model", "group": PIPELINE, "run_id": "run-1"}
        self.store.record_planned(PIPELINE, self.batch, Writer(**kw))
        self.store.record_committed(
            PIPELINE, self.batch, Writer(**kw), records=records, acked_ids={str(p): upto}
        )
        self.batch += 1

    # --- reading back what a reader would get ------------------------------------------------
    def entries(self, p: int) -> dict[str, Fields]:
        return {decode_text(i): f for i, f in self.r.xrange(self.stream(p), "-", "+")}

    def resolve(self, p: int, entry_id: str, raw: Mapping[Any, Any]) -> Resolved:
        """An entry's (or retry item's) tag and payload as the consumer resolves it."""
        message = decode_message(TOPIC, p, entry_id, raw)
        payload_field = raw.get(b"payload", raw.get("payload"))
        tag = message.headers.get(TAG)
        if not is_out_of_line(message.headers, payload_field):
            return Resolved(tag, message.payload, False)
        return self._fetch(tag, message.headers, p)

    def resolve_item(self, raw: Fields) -> Resolved:
        p = int(decode_text(raw.get(b"partitionId")) or 0)
        return self.resolve(p, "0-1", raw)

    def letter(self, dlq_id: str) -> Resolved | None:
        """A dead letter as a replay would read it (None: the letter is gone)."""
        found = self.r.xrange(self.keys.dlq(TOPIC), dlq_id, dlq_id)
        if not found:
            return None
        letter = letter_from_entry(found[0][0], found[0][1])
        tag = letter.headers.get(TAG)
        raw = letter.payload_bytes if letter.payload_bytes is not None else letter.payload.encode()
        if not is_out_of_line(letter.headers, raw):
            return Resolved(tag, letter.payload, False)
        return self._fetch(tag, letter.headers, letter.partition)

    def _fetch(self, tag: str | None, headers: Mapping[str, str], p: int) -> Resolved:
        """An out-of-line payload as a reader of partition ``p`` fetches it, and its TTL."""
        value, _ = fetch_payload(self.r, headers, prefix=self.keys.payload_prefix(TOPIC, p))
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
        ttl = int(self.r.pttl(headers.get(PAYLOAD_HASH_REF, ""))) if value is not None else -1
        return Resolved(tag, text, True, ttl if ttl >= 0 else None)
