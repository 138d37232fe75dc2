"""mqcore's housekeeper: bounded trims that never pass a group's unread entries.

Each round is one call of ``retention_trim.lua`` on one partition stream: it reads
the first ``per_round + 1`` ids, works out where the rules of the
:class:`~mqcore.retention.policy.RetentionPolicy` would cut (``MAXLEN``, age,
consumed by every group), lowers the cut to the floor of every group on the
stream that was not opted out (its lowest pending id, or the id after its
last-delivered id), and deletes with ``XTRIM MINID =`` at most ``per_round``
entries. The check and the delete are one script, so a group created or rewound
meanwhile is seen. Rounds repeat until nothing more goes or ``max_rounds``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from mqcore.clock import now_ms
from mqcore.codec import decode_text
from mqcore.config import RedisClient
from mqcore.errors import PayloadRefRefusedError
from mqcore.keys import KeySpace
from mqcore.payloads import check_payload_ref
from mqcore.retention.policy import RetentionPolicy
from mqcore.scripts import call_script
from mqcore.topics import parse_partition_count, set_members

__all__ = [
    "MAX_ROUNDS",
    "PER_ROUND",
    "PartitionTrim",
    "forget_payloads",
    "housekeep",
    "trim_partition",
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
) -> PartitionTrim:
    """Trim one partition stream by ``policy``, in bounded rounds (see the module)."""
    key = keys.partition(topic, partition)
    maxlen = "" if policy.maxlen is None else str(policy.maxlen)
    now = now_ms() if at_ms is None else at_ms
    min_id = "" if policy.max_age_ms is None else f"{max(0, now - policy.max_age_ms)}-0"
    args = [
        maxlen,
        min_id,
        "1" if policy.consumed else "0",
        max(1, per_round),
        "1" if dry_run else "0",
        *sorted(policy.ignore_groups),
    ]
    deleted = rounds = held = 0
    held_by: str | None = None
    more = False
    if not policy.enabled:
        return PartitionTrim(topic, partition, 0, 0, None, 0, False, dry_run)
    while rounds < max(1, max_rounds):
        rounds += 1
        n, _cut, holder, wanted, refs = call_script(client, "retention_trim", [key], args)
        n, wanted = int(n), int(wanted)
        if refs:
            forget_payloads(client, keys, topic, partition, [decode_text(r) for r in refs])
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


def forget_payloads(
    client: RedisClient, keys: KeySpace, topic: str, partition: int, refs: list[str]
) -> int:
    """Delete the out-of-line payload keys of trimmed entries (and their index members).

    Only references naming a payload key of this partition are followed (a producer
    wrote them: see :func:`mqcore.payloads.check_payload_ref`). Not atomic with the trim:
    a crash in between leaves payload keys that their TTL removes.
    """
    prefix = keys.payload_prefix(topic, partition)
    owned = []
    for ref in refs:
        try:
            owned.append(check_payload_ref(ref, prefix))
        except PayloadRefRefusedError:
            continue
    if not owned:
        return 0
    pipe = client.pipeline(transaction=False)
    pipe.unlink(*owned)
    pipe.srem(keys.payload_index(topic), *owned)
    return int(pipe.execute()[0])


def housekeep(
    client: RedisClient,
    keys: KeySpace,
    policy: RetentionPolicy,
    *,
    topics: Iterable[str] | None = None,
    dry_run: bool = False,
    per_round: int = PER_ROUND,
    max_rounds: int = MAX_ROUNDS,
) -> list[PartitionTrim]:
    """Trim every partition of ``topics`` (default: every registered topic)."""
    names = sorted(set(topics)) if topics is not None else set_members(client, keys.registry())
    at = now_ms()
    out: list[PartitionTrim] = []
    for topic in names:
        count = parse_partition_count(client.hget(keys.meta(topic), "partitionCount"))
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
                )
            )
    return out
