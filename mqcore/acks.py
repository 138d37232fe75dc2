"""Fenced writes of the consume side: ack, ack + schedule a retry, ack + dead-letter.

Each function is one Lua script over the keys of one topic, so the write and the
ack happen together or not at all (Redis Cluster safe: every key carries the
topic's hash tag). ``epoch`` is the fencing token of the caller's partition lease:
the script compares it with the epoch key and refuses the whole write when
another consumer has taken the partition over since (:class:`FencedError`).
``epoch=None`` skips the check; it is meant for operator actions only.

A plain ``XACK`` is not fenced in Redis, so consumers never ack outside these
scripts.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from mqcore.boundary import redis_errors
from mqcore.clock import iso_now
from mqcore.codec import decode_text, validate_id
from mqcore.config import FRONTIER_MODES, RedisClient
from mqcore.errors import (
    FencedError,
    InvalidArgumentError,
    UnknownMessageError,
)
from mqcore.keys import KeySpace
from mqcore.payloads import owned_prefix, unlinks_owned_payloads
from mqcore.retry_envelope import retry_item_fields
from mqcore.scripts import call_script, lua_source

__all__ = [
    "ACK_POLICIES",
    "PendingEntry",
    "ack",
    "ack_reply_count",
    "check_ack_policy",
    "dead_letter",
    "load_ack_script",
    "retry_item_fields",
    "schedule_retry",
]

ACK_POLICIES = ("none", "immediate", "all-groups-ack")  # Java's ackDeletePolicy values
# MQConfig.encoding -> the ack scripts' mode ("": an operator's ack leaves it alone)
_FRONTIER_MODES = {"": "", **FRONTIER_MODES}


def check_ack_policy(policy: str) -> str:
    """``policy`` if it is one of :data:`ACK_POLICIES`, else InvalidArgumentError."""
    if policy not in ACK_POLICIES:
        raise InvalidArgumentError(
            f"ack-delete policy {policy!r}: one of {', '.join(ACK_POLICIES)}"
        )
    return policy


def ack_reply_count(reply: Any) -> int:
    """Entries acked from an ack script's reply (-1: stale epoch)."""
    return int(reply[0]) if isinstance(reply, list | tuple) else int(reply)


def _delete_flag(policy: str, encoding: str) -> str:
    """The retry and dead-letter scripts' delete flag: '0' keeps the entry (policy none);
    '1' XDELs it with its payload key, '2' without (on java-kryo a Java service's retries
    share the entry's payload key)."""
    if policy == "none":
        return "0"
    return "1" if unlinks_owned_payloads(encoding) else "2"


class PendingEntry(NamedTuple):
    """An entry pending in ``group`` that a one-entry write (:func:`schedule_retry`,
    :func:`dead_letter`) settles, and the lease it is settled under: ``epoch`` the fencing
    token (None: an operator action, nothing checked), ``owner`` the consumer holding the
    lease (a take-over without a new epoch fences it too)."""

    topic: str
    group: str
    partition: int
    entry_id: str
    epoch: int | None
    owner: str | None = None


def _fence(
    keys: KeySpace, topic: str, group: str, partition: int, epoch: int | None, owner: str | None
) -> tuple[str, list[str]]:
    """The fencing ARGV of a write script and the KEYS it appends.

    ``epoch`` alone: the epoch key must still hold it. With ``owner`` (the consumer that
    holds the lease): the lease key, appended as the last KEY, must also be free or still
    ``owner``'s, so a take-over that does not raise the epoch (a Java consumer's SETNX)
    fences the old holder too. ``epoch=None`` (operator actions) checks nothing.
    """
    if epoch is None:
        return "", []
    if not owner:
        return str(int(epoch)), []
    return f"{int(epoch)}|{owner}", [keys.lease(topic, group, partition)]


def _fenced(topic: str, group: str, partition: int, epoch: int | None) -> FencedError:
    return FencedError(
        f"stale lease epoch {epoch} for {topic}/{group}/p{partition}: "
        "another consumer owns the partition"
    )


def _flatten(fields: Mapping[str, str | bytes]) -> list[str | bytes]:
    """``name, value, name, value, ...`` for a script's ARGV tail."""
    flat: list[str | bytes] = []
    for name, value in fields.items():
        flat.extend((name, value))
    return flat


def _settle_entry(
    client: RedisClient,
    keys: KeySpace,
    script: str,
    entry: PendingEntry,
    own: tuple[list[str], list[str]],
    delete: str,
    fields: Mapping[str, str | bytes] | None,
) -> Any:
    """Run a one-entry script (``schedule_retry``, ``dead_letter``) on ``entry``; its reply.

    KEYS: the partition, its epoch key, the script's ``own`` keys, a new payload key, the
    payload index, and the lease key when fenced by owner. ARGV: group, fence, entry id,
    the script's ``own`` args, the payload prefix, the ``delete`` flag, then ``fields``
    flattened. Raises :class:`FencedError` on a stale epoch and
    :class:`UnknownMessageError` when the entry is not pending (the script wrote nothing).
    """
    topic, group, partition, entry_id, epoch, owner = entry
    fence, lease = _fence(keys, topic, group, partition, epoch, owner)
    own_keys, own_args = own
    reply = call_script(
        client,
        script,
        [
            keys.partition(topic, partition),
            keys.lease_epoch(topic, group, partition),
            *own_keys,
            keys.payload(topic, partition, uuid.uuid4().hex),
            keys.payload_index(topic),
            *lease,
        ],
        [
            group,
            fence,
            entry_id,
            *own_args,
            keys.payload_prefix(topic, partition),
            delete,
            *(_flatten(fields) if fields is not None else ()),
        ],
    )
    status = int(reply[0])
    if status < 0:
        raise _fenced(topic, group, partition, epoch)
    if status == 0:
        raise UnknownMessageError(f"entry {entry_id} of {topic}/p{partition} is not pending")
    return reply


def load_ack_script(client: RedisClient) -> None:
    """Load the ack script into Redis, for pipelines that only send its EVALSHA."""
    with redis_errors("script load"):
        client.script_load(lua_source("ack_entries"))


def ack(
    client: RedisClient,
    keys: KeySpace,
    *,
    topic: str,
    group: str,
    partition: int,
    ids: Sequence[str],
    epoch: int | None,
    policy: str = "none",
    owner: str | None = None,
    frontier: str = "",
    pipe: Any = None,
) -> int | None:
    """Acknowledge ``ids`` under the ack-delete ``policy``; returns how many were pending.

    ``immediate`` and ``all-groups-ack`` XDEL an acked entry when no other group on the
    stream still needs it (not yet delivered to it, or in its PEL): every group counts,
    leased or not (a pipeline group too; :mod:`mqcore.retention.floor`), so under both an
    entry goes once the last group acks it. (Java's ``immediate`` deletes at once, and its
    ``all-groups-ack`` waits only for leased groups through per-entry ack sets, which mqcore
    neither needs nor writes; the sets Java writes expire on their own.) A deleted entry's
    out-of-line payload key goes with it, in the same script, unless ``frontier`` is
    ``java-kryo`` (a Java service's retries and letters share the key).
    With ``frontier`` (the deployment's ``MQConfig.encoding``) the group's commit frontier
    is raised in the same script to the highest id acked, never past its lowest pending
    entry nor the partition's retention floor, in that encoding. Raises
    :class:`FencedError` when ``epoch`` is stale: nothing is acked then.

    With ``pipe`` the ack is only queued and None returned (no ids: nothing queued); its
    reply (:func:`ack_reply_count`: how many were pending, -1 when fenced) comes from
    ``pipe.execute``. A ``NoScriptError`` there means Redis lost the script (restart, flush):
    call :func:`load_ack_script`, or ack again without ``pipe``.
    """
    for entry_id in ids:
        validate_id(entry_id)
    if not ids:
        return None if pipe is not None else 0
    check_ack_policy(policy)
    fence, lease = _fence(keys, topic, group, partition, epoch, owner)
    script_keys = [
        keys.partition(topic, partition),
        keys.lease_epoch(topic, group, partition),
        keys.commit_frontier(topic, partition),
        keys.payload_index(topic),
        *lease,
    ]
    delete = "0" if policy == "none" else "1"
    # on java-kryo a Java service's retries share the entry's payload key: never unlinked
    prefix = owned_prefix(frontier, keys.payload_prefix(topic, partition))
    args = [group, fence, delete, _FRONTIER_MODES[frontier], prefix, *ids]
    if pipe is not None:
        call_script(client, "ack_entries", script_keys, args, pipe=pipe)
        return None
    result = ack_reply_count(call_script(client, "ack_entries", script_keys, args))
    if result < 0:
        raise _fenced(topic, group, partition, epoch)
    return result


def schedule_retry(
    client: RedisClient,
    keys: KeySpace,
    entry: PendingEntry,
    *,
    fields: Mapping[str, str | bytes],
    due_ms: int,
    direct: bool = False,
    default_max_retries: int = 3,
    policy: str = "none",
    encoding: str = "plain",
) -> str:
    """Ack ``entry`` and schedule its next attempt, in one script.

    The retry item hash gets the fields Java's retry item has (``retryCount`` + 1,
    ``x-original-message-id`` set if absent) and joins the retry zset at
    ``due_ms``; returns the retry item id. With ``direct`` (delays <= 50 ms, as
    in Java) the entry is XADDed back to its partition at once instead and the
    new entry id is returned. An out-of-line payload is copied to a key the retry item
    (or the new entry) owns alone. Under the ack-delete ``policy`` ``immediate`` or
    ``all-groups-ack`` the entry is XDELed (with its payload key) once no other group
    still needs it (the key stays on ``encoding="java-kryo"``). Raises :class:`FencedError`
    on a stale epoch and :class:`UnknownMessageError` when the entry is no longer pending
    (nothing is written in either case).
    """
    topic, _, partition, entry_id, _, _ = entry
    validate_id(entry_id)
    check_ack_policy(policy)
    item = retry_item_fields(
        fields,
        topic=topic,
        partition=partition,
        entry_id=entry_id,
        default_max_retries=default_max_retries,
    )
    item_id = uuid.uuid4().hex
    if direct:
        item["timestamp"] = iso_now()
    else:
        item.pop("timestamp", None)
    own = (
        [keys.retry_zset(topic), keys.retry_item(topic, item_id)],
        [str(int(due_ms)), "direct" if direct else "zset"],
    )
    delete = _delete_flag(policy, encoding)
    reply = _settle_entry(client, keys, "schedule_retry", entry, own, delete, item)
    return item_id if not direct else str(decode_text(reply[1]))


def dead_letter(
    client: RedisClient,
    keys: KeySpace,
    entry: PendingEntry,
    *,
    reason: str,
    error_type: str = "",
    fields: Mapping[str, str | bytes] | None = None,
    encoding: str = "plain",
    policy: str = "none",
) -> str | None:
    """Move a pending entry to the topic's DLQ and ack it, in one script.

    The DLQ entry has exactly the fields Java's DLQ entry has, with ``partitionId`` the real
    partition (top level and in headers; Java writes 0 at the top level). The
    entry is read inside the script unless ``fields`` are given. Returns the DLQ
    id, or None when the entry was trimmed/deleted (it is still acked; the
    caller counts it as lost). With ``encoding="java-kryo"`` the letter is written as
    Java's ``DeadLetterCodec`` writes it through Redisson's Kryo codec. An out-of-line
    payload is copied to a key the letter owns alone (a gone one: the letter carries
    ``x-payload-missing``). Under the ack-delete ``policy`` ``immediate`` or
    ``all-groups-ack`` the entry is XDELed (with its payload key) once no other group
    still needs it. Raises :class:`FencedError` on a stale epoch and
    :class:`UnknownMessageError` when the entry is not pending in ``group``.
    """
    validate_id(entry.entry_id)
    check_ack_policy(policy)
    mode = "given" if fields is not None else "read"  # where the script finds the fields
    if encoding == "java-kryo":
        mode += "-kryo"
    topic, partition = entry.topic, str(entry.partition)
    own = ([keys.dlq(topic)], [topic, partition, iso_now(), reason, error_type, mode])
    delete = _delete_flag(policy, encoding)
    reply = _settle_entry(client, keys, "dead_letter", entry, own, delete, fields)
    if int(reply[0]) == 2:
        return None
    return str(decode_text(reply[1]))
