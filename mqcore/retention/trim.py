"""mqcore's housekeeper: bounded trims that never pass a group's unread entries.

Each round is one call of ``retention_trim.lua`` on one partition stream: it reads
the first ``per_round + 1`` ids, works out where the rules of the
:class:`~mqcore.retention.policy.RetentionPolicy` would cut (``MAXLEN``, age,
consumed by every group), lowers the cut to the retention floor of the groups on
the stream that were not opted out (:mod:`mqcore.retention.floor`; ``lib/floor.lua``
in the script), and deletes with ``XTRIM MINID =`` at most ``per_round`` entries,
unlinking the out-of-line payload key each deleted entry owns (``lib/payloads.lua``;
not on ``java-kryo`` deployments). The check and the delete are one script, so a group
created or rewound meanwhile is seen. Rounds repeat until nothing more goes or
``max_rounds``. ``mqcore topic trim`` (:func:`trim_topic`, :func:`trim_dlq`) is the same
trim with the rules given on the command line; :func:`topic_trims` also takes a MINID
(delete below an id: the console's trim) and plans without deleting (``dry_run``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from mqcore.clock import now_ms
from mqcore.codec import decode_text, id_tuple, partition_count_from_meta, validate_id
from mqcore.config import RedisClient
from mqcore.errors import InvalidArgumentError
from mqcore.keys import KeySpace
from mqcore.payloads import owned_prefix
from mqcore.retention.policy import RetentionPolicy
from mqcore.scripts import call_script
from mqcore.topics import Topics, set_members

__all__ = [
    "MAX_ROUNDS",
    "PER_ROUND",
    "PartitionTrim",
    "housekeep",
    "topic_trims",
    "trim_dlq",
    "trim_partition",
    "trim_topic",
]

PER_ROUND = 1000  # entries per script call: about a millisecond of Redis time
MAX_ROUNDS = 100  # per partition and run: 100,000 entries; the next run goes on


@dataclass(frozen=True)
class PartitionTrim:
    """What one partition's trim did (or, with ``dry_run``, would do in its first round)."""

    topic: str
    partition: int
    deleted: int
    rounds: int
    held_by: str | None  # the group whose unread entries stopped a rule
    held: int  # entries the rules wanted gone but that group has not consumed (in the last round)
    more: bool  # stopped by max_rounds (or a dry run's first round was full)
    dry_run: bool

    def as_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "deleted": self.deleted,
            "rounds": self.rounds,
            "held_by": self.held_by,
            "held": self.held,
            "more": self.more,
            "dry_run": self.dry_run,
        }


def trim_partition(
    client: RedisClient,
    keys: KeySpace,
    topic: str,
    partition: int,
    policy: RetentionPolicy,
    *,
    dry_run: bool = False,
    per_round: int = PER_ROUND,
    max_rounds: int = MAX_ROUNDS,
    at_ms: int | None = None,
    encoding: str = "plain",
    min_id: str | None = None,
) -> PartitionTrim:
    """Trim one partition stream by ``policy``, in bounded rounds (see the module), and
    below ``min_id`` when given (a rule like the age rule's MINID; the higher one wins).

    ``encoding`` is the deployment's ``MQConfig.encoding``: on ``java-kryo`` (a Java
    service shares the payload keys: its retries point at the entry's key) no payload key
    is unlinked (:func:`mqcore.payloads.owned_prefix`)."""
    prefix = owned_prefix(encoding, keys.payload_prefix(topic, partition))
    key = keys.partition(topic, partition)
    return _trim(
        client, keys, topic, partition, key, policy, (prefix, "0"),
        dry_run=dry_run, per_round=per_round, max_rounds=max_rounds, at_ms=at_ms,
        min_id=min_id,
    )  # fmt: skip


def _trim(
    client: RedisClient,
    keys: KeySpace,
    topic: str,
    partition: int,
    key: str,
    policy: RetentionPolicy,
    payloads: tuple[str, str],
    *,
    dry_run: bool,
    per_round: int,
    max_rounds: int,
    at_ms: int | None,
    min_id: str | None = None,
) -> PartitionTrim:
    maxlen = "" if policy.maxlen is None else str(policy.maxlen)
    now = now_ms() if at_ms is None else at_ms
    age_id = "" if policy.max_age_ms is None else f"{max(0, now - policy.max_age_ms)}-0"
    if min_id and (not age_id or id_tuple(age_id) < id_tuple(min_id)):
        age_id = min_id
    args = [
        maxlen,
        age_id,
        "1" if policy.consumed else "0",
        max(1, per_round),
        "1" if dry_run else "0",
        *payloads,
        *sorted(policy.ignore_groups),
    ]
    script_keys = [key, keys.payload_index(topic)]
    deleted = rounds = held = 0
    held_by: str | None = None
    more = False
    if not policy.enabled and not age_id:
        return PartitionTrim(topic, partition, 0, 0, None, 0, False, dry_run)
    while rounds < max(1, max_rounds):
        rounds += 1
        n, _cut, holder, wanted, _unlinked = call_script(
            client, "retention_trim", script_keys, args
        )
        n, wanted = int(n), int(wanted)
        deleted += n
        holder_name = decode_text(holder)
        held_by, held = (holder_name, wanted - n) if holder_name else (None, 0)
        if dry_run:
            more = n >= per_round
            break
        if n < per_round:
            break
    else:
        more = True
    return PartitionTrim(topic, partition, deleted, rounds, held_by, held, more, dry_run)


def trim_dlq(
    client: RedisClient,
    keys: KeySpace,
    topic: str,
    policy: RetentionPolicy,
    *,
    encoding: str = "plain",
    per_round: int = PER_ROUND,
    max_rounds: int = MAX_ROUNDS,
) -> PartitionTrim:
    """Trim ``topic``'s dead-letter stream by ``policy`` like a partition (never past the
    floor of a group on it; ``partition`` -1 in the answer); a letter's payload key, under
    any partition of the topic, goes with it (not on ``java-kryo``)."""
    prefix = owned_prefix(encoding, keys.payload_topic_prefix(topic))
    return _trim(
        client, keys, topic, -1, keys.dlq(topic), policy, (prefix, "1"),
        dry_run=False, per_round=per_round, max_rounds=max_rounds, at_ms=None,
    )  # fmt: skip


def _rules(maxlen: int | None, min_age_ms: int | None) -> RetentionPolicy:
    for label, value in (("maxlen", maxlen), ("min_age_ms", min_age_ms)):
        bad = isinstance(value, bool) or not isinstance(value, int) or value < 0
        if value is not None and bad:
            raise InvalidArgumentError(f"{label} must be a non-negative integer, got {value!r}")
    return RetentionPolicy(maxlen=maxlen, max_age_ms=min_age_ms)


def trim_topic(
    topics: Topics,
    topic: str,
    *,
    maxlen: int | None = None,
    min_age_ms: int | None = None,
    dlq: bool = False,
) -> int:
    """``mqcore topic trim``: keep at most ``maxlen`` entries per partition and/or delete
    those older than ``min_age_ms``, in the housekeeper's bounded rounds and never past the
    retention floor of any group (of the dead-letter stream's groups with ``dlq``), in the
    encoding of ``topics.config``. Returns the entries removed."""
    if maxlen is None and min_age_ms is None:
        raise InvalidArgumentError("trim needs maxlen or min_age_ms")
    if not dlq:
        trims = topic_trims(topics, topic, maxlen=maxlen, min_age_ms=min_age_ms)
        return sum(t.deleted for t in trims)
    policy = _rules(maxlen, min_age_ms)
    client, keys, encoding = topics.client, topics.keys, topics.config.encoding
    return trim_dlq(client, keys, topic, policy, encoding=encoding).deleted


def topic_trims(
    topics: Topics,
    topic: str,
    *,
    maxlen: int | None = None,
    min_id: str | None = None,
    min_age_ms: int | None = None,
    dry_run: bool = False,
) -> list[PartitionTrim]:
    """Each partition's trim of ``topic`` by ``maxlen``, ``min_id`` and/or ``min_age_ms``
    (the housekeeper's bounded rounds, never past the retention floor; a dry run plans
    the first round of each partition: at most :data:`PER_ROUND` entries, ``more`` beyond)."""
    if maxlen is None and min_age_ms is None and not min_id:
        raise InvalidArgumentError("trim needs maxlen, min_id or min_age_ms")
    policy = _rules(maxlen, min_age_ms)
    if min_id:
        validate_id(min_id)
        ms, seq = id_tuple(min_id)
        min_id = f"{ms}-{seq}"
    topics.partition_count(topic)  # an unknown topic: UnknownTopicError
    client, keys, encoding = topics.client, topics.keys, topics.config.encoding
    return housekeep(
        client, keys, policy, topics=[topic], dry_run=dry_run, encoding=encoding, min_id=min_id
    )


def housekeep(
    client: RedisClient,
    keys: KeySpace,
    policy: RetentionPolicy,
    *,
    topics: Iterable[str] | None = None,
    dry_run: bool = False,
    per_round: int = PER_ROUND,
    max_rounds: int = MAX_ROUNDS,
    encoding: str = "plain",
    min_id: str | None = None,
) -> list[PartitionTrim]:
    """Trim every partition of ``topics`` (default: every registered topic); ``encoding``:
    the deployment's, ``min_id`` a MINID rule: see :func:`trim_partition`."""
    names = sorted(set(topics)) if topics is not None else set_members(client, keys.registry())
    at = now_ms()
    out: list[PartitionTrim] = []
    for topic in names:
        count = partition_count_from_meta(client.hget(keys.meta(topic), "partitionCount"))
        for p in range(count):
            out.append(
                trim_partition(
                    client,
                    keys,
                    topic,
                    p,
                    policy,
                    dry_run=dry_run,
                    per_round=per_round,
                    max_rounds=max_rounds,
                    at_ms=at,
                    encoding=encoding,
                    min_id=min_id,
                )
            )
    return out
