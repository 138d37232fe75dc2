"""Replaying dead letters: batches of ids through ``replay_letters.lua``, one result per id.

Each batch of ``REPLAY_BATCH`` letters is one atomic script call. The target's
partition count is cached for a few seconds; when the script finds it stale the
batch is sent again with a fresh count. A letter whose partition the target does
not have comes back as ``route`` with its key (nothing written); its partition is
computed here by the one partitioner (:func:`mqcore.partition.partition_for_key`,
Java's) and the letter is sent again pinned to it.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Sequence
from typing import Any

from mqcore.clock import iso_from_ms, now_ms
from mqcore.codec import decode_text
from mqcore.config import RedisClient
from mqcore.dlq.letters import plain_fields
from mqcore.errors import InvalidArgumentError, UnknownPartitionError
from mqcore.keys import KeySpace
from mqcore.models import ReplayResult
from mqcore.partition import partition_for_key
from mqcore.scripts import call_script
from mqcore.topics import read_partition_count
from mqcore.wire import Wire

REPLAY_BATCH = 50  # letters per script call: 100 took Redis 3-4.5 ms on a loaded 2-core machine
_META_TTL_S = 5.0


class Replayer:
    """The replays of one deployment's dead letters (:class:`~mqcore.dlq.DeadLetters`' own):
    it keeps each target's partition count (a few seconds) and each call's script keys."""

    def __init__(self, client: RedisClient, keys: KeySpace, wire: Wire | None = None) -> None:
        self.client, self.keys, self.wire = client, keys, wire
        self._counts: dict[str, tuple[int, float]] = {}
        self._script_keys: dict[tuple[str, str, int], list[str]] = {}

    def target_count(self, target: str, *, refresh: bool = False) -> int:
        """The partition count of ``target`` (cached); UnknownTopicError if unknown."""
        cached = self._counts.get(target)
        if cached and not refresh and time.monotonic() - cached[1] < _META_TTL_S:
            return cached[0]
        count = read_partition_count(self.client, self.keys, target, f"read topic {target}")
        self._counts[target] = (count, time.monotonic())
        return count

    def script_keys(self, topic: str, target: str, count: int) -> list[str]:
        """The script's keys: the DLQ, its replay records, the target's meta, payload index
        set and partitions."""
        cache, space = self._script_keys, self.keys
        keys = cache.get((topic, target, count))
        if keys is None:
            keys = [
                space.dlq(topic),
                space.dlq_replays(topic),
                space.meta(target),
                space.payload_index(target),
                *(space.partition(target, p) for p in range(count)),
            ]
            if len(cache) > 1000:
                cache.clear()
            cache[(topic, target, count)] = keys
        return keys

    def run(
        self,
        topic: str,
        ids: Sequence[str],
        target: str,
        *,
        by: str,
        force: bool,
        target_partition: int | None,
        dry: bool,
    ) -> list[ReplayResult]:
        """Replay (with ``dry`` only plan) validated ``ids`` of ``topic`` onto a known
        ``target``; the script calls go out on the wire when there is one (see
        :func:`mqcore.scripts.call_script`)."""
        client, space = self.client, self.keys
        count = self.target_count(target)
        if target_partition is not None and not 0 <= target_partition < count:
            raise UnknownPartitionError(
                f"topic {target!r} has partitions 0..{count - 1}, not {target_partition}"
            )
        fixed = -1 if target_partition is None else target_partition

        def send(
            chunk: list[str], keyed: list[tuple[str, str]], given: dict[str, Any] | None = None
        ) -> list[Any]:
            """One script call for ``chunk`` plus the ``(id, key)`` letters pinned by key;
            ``given``: decoded fields of letters Java wrote through Kryo."""
            nonlocal count
            for _attempt in range(3):
                now = now_ms()
                keys = self.script_keys(topic, target, count)
                flags = ["1" if force else "0", target, fixed, "1" if dry else "0"]
                pinned = [f"{dlq_id}={partition_for_key(key, count)}" for dlq_id, key in keyed]
                decoded = json.dumps(given, ensure_ascii=False) if given else "{}"
                payloads = [space.payload_topic_prefix(topic), space.payload_topic_prefix(target)]
                token = uuid.uuid4().hex  # names this call's new payload keys
                args = [now, iso_from_ms(now), by, *flags, decoded, *payloads, token]
                args += [*chunk, *pinned]
                reply: list[Any] = call_script(client, "replay_letters", keys, args, wire=self.wire)
                if not (reply and reply[0] == b"stale"):
                    return reply
                count = self.target_count(target, refresh=True)
            raise InvalidArgumentError(f"partition count of {target!r} keeps changing")

        out: list[ReplayResult] = []
        for start in range(0, len(ids), REPLAY_BATCH):
            chunk = list(ids[start : start + REPLAY_BATCH])
            rows = send(chunk, [])
            kryo = [i for i, row in enumerate(rows) if row[1] == b"java-kryo"]
            if kryo:  # letters Java wrote through Redisson's Kryo codec: decoded here, sent again
                wanted = [decode_text(rows[i][0]) for i in kryo]
                again = send(wanted, [], java_fields(client, space.dlq(topic), wanted))
                for i, row in zip(kryo, again, strict=True):
                    rows[i] = row
            routed = [i for i, row in enumerate(rows) if row[1] == b"route"]
            if routed:  # letters whose partition is gone: where their key lives now
                keyed = [(decode_text(rows[i][0]), decode_text(rows[i][2])) for i in routed]
                again = send([], keyed)
                for i, row in zip(routed, again, strict=True):
                    rows[i] = row
            out.extend(_result(row, target) for row in rows)
        return out


def java_fields(client: RedisClient, dlq: str, ids: Sequence[str]) -> dict[str, Any]:
    """Id -> the plain-layout fields of letters Java wrote through Kryo (as the DLQ pages
    read them), for the replay script."""
    pipe = client.pipeline(transaction=False)
    for dlq_id in ids:
        pipe.xrange(dlq, dlq_id, dlq_id, count=1)
    out: dict[str, Any] = {}
    for dlq_id, found in zip(ids, pipe.execute(), strict=True):
        if found:
            fields = plain_fields(found[0][1])
            out[dlq_id] = {decode_text(k): decode_text(v) for k, v in fields.items() if v}
    return out


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
