"""The pass behind :meth:`mqcore.admin.Admin.snapshot`: its command plan, run in batches.

Command plan (every command bounded and O(1) or O(log n), pipelined ``batch`` at
a time; on Redis Cluster redis-py's cluster pipeline groups them by slot):

1. per topic: ``HGET meta partitionCount``, ``XLEN dlq``, ``ZCARD retry``;
   ``SMEMBERS`` of the pipeline set;
2. per partition: ``XINFO GROUPS`` and ``XLEN``; per topic with retries:
   ``ZRANGE 0 0`` and ``ZRANGEBYSCORE now +inf LIMIT 0 1``; per pipeline:
   ``HGETALL`` of its checkpoint meta;
3. per group x partition: ``XPENDING - + 1`` only when something is pending;
   ``XRANGE (last-delivered + COUNT 1`` only when lag > 0 (lag in time) and the
   group moved or an entry was removed since the previous pass (appends leave the
   first undelivered entry where it was) and it is not the last entry that a group with
   lag 0 has delivered (lag 1 beside a caught-up group), or ``COUNT 1000`` when Redis
   reports NULL lag (bounded count, marked APPROXIMATE when the page is full); per group:
   ``HGETALL`` of the heartbeat hash; per partition whose last id no group tells (a
   group with lag 0 has delivered the last entry; the first undelivered entry of a group
   with lag 1 is the last) and no previous pass knows: ``XREVRANGE + - COUNT 1``, or
   ``XINFO STREAM`` (its last-generated id; no entry to send) for an emptied one (length
   0, entries added: every group reports lag 0 there, whatever its position), unless
   the caller asked for no last ids (``last_ids=False``: those stay None);
   per topic: ``MGET`` of the lease and epoch keys of all its group x partition pairs
   (one slot; at most 500 keys per command);
4. ``PTTL`` of the leases that have an owner.

The pass builds the :class:`~mqcore.models.ClusterSnapshot` structs directly (the console
stores their JSON, :func:`mqcore.models.snapshot_encode`). The commands go through
:class:`mqcore.wire.Wire`
(packed on one connection on a plain client, an ordinary pipeline otherwise);
both give the same result.

A topic whose commands fail gets its ``error`` set; the others are unaffected.
"""

from __future__ import annotations

import gc
import time
import weakref
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from itertools import repeat
from typing import TYPE_CHECKING, Any, Protocol

import redis
from msgspec import UNSET, UnsetType

from mqcore import lag as lagmath
from mqcore.checkpoints import pipeline_summary
from mqcore.clock import now_ms
from mqcore.codec import decode_text, partition_count_from_meta
from mqcore.models import ClusterSnapshot, Replication, RetryBacklog, TopicSnapshot
from mqcore.snapshot.replies import as_hash, entry_id, ok, parse_groups
from mqcore.snapshot.topic import topic_snapshot
from mqcore.wire import Command, Wire

if TYPE_CHECKING:
    from mqcore.config import MQConfig
    from mqcore.keys import KeySpace


class Admin(Protocol):
    """What a pass reads from :class:`mqcore.admin.Admin` (which calls it, so no import)."""

    config: MQConfig
    keys: KeySpace
    client: Any

    def topics(self) -> list[str]: ...


__all__ = ["Admin", "gc_paused", "server_facts", "take_snapshot"]

_Cmd = Command
LEASE_KEYS_PER_MGET = 500  # lease and epoch keys of one topic per MGET
# Per client, from the previous pass: stream key -> (fingerprint, last id) and
# (stream key, group) -> (fingerprint, first undelivered id); see take_snapshot.
_CACHE: weakref.WeakKeyDictionary[Any, tuple[dict[str, Any], dict[Any, Any]]] = (
    weakref.WeakKeyDictionary()
)


# --- the pass ----------------------------------------------------------------------------------


def take_snapshot(
    admin: Admin, *, topics: Iterable[str] | None, batch: int, last_ids: bool = True
) -> ClusterSnapshot:
    """One pass over the deployment (its ``topics``; all of them for None).

    ``last_ids=False`` reads no partition's last id for its own sake: a partition's
    ``last_id`` is then None unless a group or the previous pass tells it for free.
    """
    with gc_paused():
        return _take_snapshot(admin, topics=topics, batch=batch, last_ids=last_ids)


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection inside the block (re-enabled after, if it was on).

    A pass allocates a few hundred thousand short-lived, acyclic containers;
    the collector's generation sweeps over them (and the rest of the heap) would
    cost a third of the pass. Reference counting still frees everything.

    On the way out, what the block allocated and still holds (the snapshot it
    returns) would be traversed at once by the first young collection: 0.3 s at
    50,000 partitions. Unless the process froze objects of its own, the block's
    survivors go straight to the oldest generation instead (``gc.freeze`` then
    ``gc.unfreeze``, which only splice the generation lists).
    """
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            promote = gc.get_freeze_count() == 0
            if promote:
                gc.freeze()
            gc.enable()
            if promote:
                gc.unfreeze()


def _take_snapshot(
    admin: Admin, *, topics: Iterable[str] | None, batch: int, last_ids: bool
) -> ClusterSnapshot:
    started = time.perf_counter()
    keys, client = admin.keys, admin.client
    runner = Wire(client, batch)
    now = now_ms()
    names = sorted(set(topics)) if topics is not None else admin.topics()
    n_topics = len(names)
    errors: dict[int, str] = {}

    # 1. per topic
    cmds: list[_Cmd] = []
    for name in names:
        cmds.append(("HGET", keys.meta(name), "partitionCount"))
        cmds.append(("XLEN", keys.dlq(name)))
        cmds.append(("ZCARD", keys.retry_zset(name)))
    cmds.append(("SMEMBERS", keys.pipelines()))
    r1 = runner.run(cmds)
    counts = [partition_count_from_meta(ok(r1[3 * t], errors, t)) for t in range(n_topics)]
    dlq_len = [int(ok(r1[3 * t + 1], errors, t, 0) or 0) for t in range(n_topics)]
    retry_n = [int(ok(r1[3 * t + 2], errors, t, 0) or 0) for t in range(n_topics)]
    pipeline_names = sorted(decode_text(x) for x in (ok(r1[-1], {}, -1) or []))

    # 2. per partition
    streams = [[keys.partition(name, p) for p in range(counts[t])] for t, name in enumerate(names)]
    cmds = []
    for t in range(n_topics):
        for key in streams[t]:
            cmds.append(("XINFO", "GROUPS", key))
            cmds.append(("XLEN", key))
    retry_at: dict[int, int] = {}
    for t, name in enumerate(names):
        if retry_n[t]:
            zset = keys.retry_zset(name)
            retry_at[t] = len(cmds)
            cmds.append(("ZRANGE", zset, 0, 0, "WITHSCORES"))
            cmds.append(("ZRANGEBYSCORE", zset, now, "+inf", "WITHSCORES", "LIMIT", 0, 1))
    meta_at = len(cmds)
    cmds.extend(("HGETALL", keys.checkpoint_meta(n)) for n in pipeline_names)
    r2 = runner.run(cmds)

    # 3. per group x partition; a record per group: [name, pending, last-delivered,
    # entries-read, lag, record number (its lease and epoch keys are lease_keys[2n:2n+2]),
    # XPENDING index, XRANGE index, cached first id, fingerprint]
    cluster = bool(admin.config.cluster)
    old_last, old_first = _CACHE.get(client) or ({}, {})
    new_last: dict[str, tuple[Any, str]] = {}
    new_first: dict[tuple[str, str], tuple[Any, str]] = {}
    parts: list[list[tuple[int, list[list[Any]], str | None, int]]] = []
    cmds = []
    add = cmds.append
    beat_at: dict[tuple[int, str], int] = {}
    lease_keys: list[str] = []  # per record: its lease key, then its epoch key
    lease_at: list[tuple[int, int, int]] = []  # (reply index, first key, keys) of each read
    get_first, get_last = old_first.get, old_last.get
    lease_prefixes = keys.lease_prefixes
    i = 0
    rec_n = 0  # records so far: len(lease_keys) // 2
    t_at: list[int] = []  # per topic: the index of its first command (its replies in r3)
    for t, name in enumerate(names):
        t_at.append(len(cmds))
        t_parts = []
        t_first = len(lease_keys)
        # per group of topic t: the prefixes of its lease and epoch keys (its heartbeat
        # hash is read once, with its first record)
        t_groups: dict[str, tuple[str, str]] = {}
        for p, key in enumerate(streams[t]):
            infos, length = r2[i], r2[i + 1]
            r2[i] = None  # parsed below: the raw reply goes now (memory, see _free)
            i += 2
            if isinstance(infos, Exception):
                infos = ok(infos, errors, t, None)
            if length.__class__ is not int:
                length = int(ok(length, errors, t, 0) or 0)
            try:
                parsed = parse_groups(infos)
            except (KeyError, ValueError, TypeError, IndexError) as exc:
                errors.setdefault(t, f"{type(exc).__name__}: {exc}")
                parsed = []
            last_id: str | None = None  # a group with lag 0 has delivered the last entry
            added = None
            for g in parsed:
                if g[4] == 0 and length:  # an emptied stream reports lag 0 for every group
                    last_id = g[2]
                if added is None and g[3] is not None and g[4] is not None:
                    added = g[3] + g[4]
            removed = None if added is None else added - length
            recs: list[list[Any]] = []
            p_s = str(p)
            one: list[Any] | None = None  # the record of a group with lag 1
            for gname, pending, last, read, lag in parsed:
                prefixes = t_groups.get(gname)
                first_rec = prefixes is None
                if prefixes is None:
                    prefixes = t_groups[gname] = lease_prefixes(name, gname)
                rec: list[Any] = [gname, pending, last, read, lag, rec_n, -1, -1, None, None]
                rec_n += 1
                lease_keys.append(prefixes[0] + p_s)
                lease_keys.append(prefixes[1] + p_s)
                if pending > 0:
                    rec[6] = len(cmds)
                    add(("XPENDING", key, gname, "-", "+", 1))
                if lag is None:
                    rec[7] = len(cmds)
                    add(("XRANGE", key, "(" + last, "+", "COUNT", lagmath.COUNT_PAGE))
                elif lag > 0:
                    # the first undelivered entry stays the same while nothing was delivered
                    # or removed (same position and entries-read, same count of entries
                    # removed: entries-added minus length): appends come after it, so a
                    # lagging group whose producer goes on is not read again; a real
                    # position (an id of this stream, not 0-0) also tells a recreated stream
                    mark = (last, read, removed) if removed is not None else None
                    hit = get_first((key, gname)) if last != "0-0" and mark else None
                    if hit is not None and hit[0] == mark:
                        rec[8] = hit[1]
                    elif lag == 1 and last_id is not None:
                        rec[8] = last_id  # the one entry after its position is the last
                    else:
                        rec[7] = len(cmds)
                        add(("XRANGE", key, "(" + last, "+", "COUNT", 1))
                    rec[9] = mark
                    if lag == 1:
                        one = rec
                recs.append(rec)
                if first_rec:
                    beat_at[t, gname] = len(cmds)
                    add(("HGETALL", keys.consumers(name, gname)))
            last_at = -1  # the reply whose first entry is the last: XREVRANGE, or lag 1's XRANGE
            # an empty stream that had entries (entries-added > 0, told by its groups) still
            # has the last-generated id its data ended at: XINFO STREAM (no entry to send);
            # one never written (or that no group reads) is at 0-0
            if not length and not added:
                last_id = "0-0"
            if last_id is None:
                # the last id changes only with XADD (entries-added) - or a recreated stream
                positions = tuple([g[2] for g in parsed])
                # a position other than 0-0 (count: no generator per partition)
                known_stream = added is not None and positions.count("0-0") < len(positions)
                mark_l = (added, length, positions) if known_stream else None
                hit_l = get_last(key) if mark_l is not None else None
                if one is not None and one[8] is not None:
                    last_id = one[8]
                elif one is not None:
                    last_at = one[7]
                elif hit_l is not None and hit_l[0] == mark_l:
                    last_id = hit_l[1]
                elif last_ids:
                    last_at = len(cmds)
                    add(
                        ("XREVRANGE", key, "+", "-", "COUNT", 1)
                        if length
                        else ("XINFO", "STREAM", key)
                    )
                if mark_l is not None and (last_id is not None or last_at >= 0):
                    new_last[key] = (mark_l, last_id or "")
            t_parts.append((length, recs, last_id, last_at))
        parts.append(t_parts)
        # the topic's leases and epochs in MGETs (cluster pipelines refuse MGET: GETs, as
        # all the keys of a topic share its slot)
        for first in range(t_first, len(lease_keys), 1 if cluster else LEASE_KEYS_PER_MGET):
            got = 1 if cluster else min(LEASE_KEYS_PER_MGET, len(lease_keys) - first)
            lease_at.append((len(cmds), first, got))
            last_key = first + got
            add(("GET", lease_keys[first]) if cluster else ("MGET", *lease_keys[first:last_key]))
    t_at.append(len(cmds))
    r3 = runner.run(cmds)
    leases = _lease_values(r3, lease_at, len(lease_keys))
    # 4. PTTL of the leases that have an owner
    cmds = []
    ttl_at = [-1] * (len(lease_keys) // 2)
    for rec_n, owner in enumerate(leases[::2]):
        if owner is not None and not isinstance(owner, Exception):
            ttl_at[rec_n] = len(cmds)
            cmds.append(("PTTL", lease_keys[2 * rec_n]))
    r4 = runner.run(cmds)
    ttls = [r4[at] if at >= 0 else None for at in ttl_at]
    del add, cmds, r4, ttl_at, lease_keys, lease_at

    def fetch_after(key: str) -> Callable[[str], list[str]]:
        """The next pages of a NULL-lag count (rare: a full first page), outside the batches."""

        def page(cursor: str) -> list[str]:
            runner.commands += 1
            return [entry_id(e) for e in client.xrange(key, "(" + cursor, "+", lagmath.COUNT_PAGE)]

        return page

    out: list[TopicSnapshot] = []
    for t, name in enumerate(names):
        snap: TopicSnapshot | None = None
        if t not in errors:
            try:
                snap = topic_snapshot(
                    t, name, dlq_len[t], retry_n[t], now, errors, parts[t], streams[t], r2,
                    retry_at.get(t), r3, beat_at, new_first, new_last, leases, ttls, fetch_after,
                )  # fmt: skip
            except (KeyError, ValueError, TypeError, IndexError, redis.RedisError) as exc:
                errors.setdefault(t, f"{type(exc).__name__}: {exc}")
            _free(r3, t_at[t], t_at[t + 1])
            parts[t] = []
        if t in errors or snap is None:
            snap = TopicSnapshot(
                name,
                counts[t],
                0,
                dlq_len[t],
                RetryBacklog(retry_n[t], None, None),
                [],
                [],
                [],
                error=errors.get(t, "unreadable"),
            )
        out.append(snap)
    _CACHE[client] = (new_last, new_first)
    pipelines = []
    for k, n in enumerate(pipeline_names):  # those with a checkpoint, as CheckpointStore's
        summary = pipeline_summary(n, as_hash(ok(r2[meta_at + k], {}, -1, {})))
        if summary is not None:
            pipelines.append(summary)
    run_id, replication = server_facts(client)
    return ClusterSnapshot(
        now,
        out,
        run_id,
        (time.perf_counter() - started) * 1000,
        runner.commands + 1,
        pipelines,
        replication=replication,
    )


def _free(replies: list[Any], start: int, end: int) -> None:
    """Drop ``replies[start:end]``, read already: at 50,000 partitions the raw replies
    held while the snapshot is built were half the pass's peak memory (209 -> 114 MiB)."""
    replies[start:end] = repeat(None, end - start)


def _lease_values(replies: list[Any], reads: list[tuple[int, int, int]], n: int) -> list[Any]:
    """Per lease key read (``reads``: reply index, first key, keys), its value, or the error
    reply of its read."""
    out: list[Any] = [None] * n
    for at, first, count in reads:
        reply = replies[at]
        if reply.__class__ is list and len(reply) == count:
            out[first : first + count] = reply
        elif count == 1 and not isinstance(reply, list | tuple):
            out[first] = reply  # a GET
        else:
            error = reply if isinstance(reply, Exception) else ValueError(f"MGET: {reply!r}")
            out[first : first + count] = [error] * count
    return out


def server_facts(client: Any) -> tuple[str, Replication | UnsetType]:
    """Server run id (a restart changes it; on a cluster, the sorted node ids joined) and,
    off a cluster, the replication facts: one ``INFO server replication`` (the round trip
    the run id took alone before)."""
    if isinstance(client, redis.RedisCluster):
        try:
            info = client.info("server")
        except redis.RedisError:
            return "", UNSET
        if not isinstance(info, dict):
            return "", UNSET
        ids = sorted(str(v.get("run_id", "")) for v in info.values() if isinstance(v, dict))
        return ",".join(i for i in ids if i), UNSET
    try:
        info = client.info("server", "replication")
    except redis.RedisError:
        return "", UNSET
    if not isinstance(info, dict) or "run_id" not in info:
        return "", UNSET
    run_id = str(info["run_id"])
    port, last_io = info.get("tcp_port"), info.get("master_last_io_seconds_ago")
    replication = Replication(
        role=str(info.get("role") or ""),
        run_id=run_id,
        replid=str(info.get("master_replid") or ""),
        replid2=str(info.get("master_replid2") or ""),
        offset=int(info.get("master_repl_offset") or 0),
        port=port if isinstance(port, int) else None,
        replicas=int(info.get("connected_slaves") or 0),
        link=str(info.get("master_link_status") or ""),
        last_io_s=last_io if isinstance(last_io, int) else None,
    )
    return run_id, replication
