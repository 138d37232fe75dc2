"""One pass over a whole deployment: the data behind :meth:`mqcore.admin.Admin.snapshot`.

Command plan (every command bounded and O(1) or O(log n), pipelined ``batch`` at
a time; on Redis Cluster redis-py's cluster pipeline groups them by slot):

1. per topic: ``HGET meta partitionCount``, ``XLEN dlq``, ``ZCARD retry``;
   ``SMEMBERS`` of the pipeline set;
2. per partition: ``XINFO GROUPS`` and ``XLEN``; per topic with retries:
   ``ZRANGE 0 0`` and ``ZRANGEBYSCORE now +inf LIMIT 0 1``; per pipeline:
   ``HGETALL`` of its checkpoint meta;
3. per group x partition: ``MGET lease epoch`` (same slot), ``XPENDING - + 1``
   only when something is pending, ``XRANGE (last-delivered + COUNT 1`` only when
   lag > 0 (lag in time) or ``COUNT 1000`` when Redis reports NULL lag (bounded
   count, marked APPROXIMATE when the page is full); per group: ``HGETALL`` of
   the heartbeat hash; per partition whose last id no caught-up group tells
   (a group with lag 0 has delivered the last entry): ``XREVRANGE + - COUNT 1``;
4. ``PTTL`` of the leases that have an owner.

The pass builds plain dicts (the JSON form of :class:`~mqcore.models.ClusterSnapshot`,
field for field) that the console stores as they are; :func:`snapshot_from_dict`
turns them into the dataclasses. The commands go through :class:`mqcore.wire.Wire`
(packed on one connection on a plain client, an ordinary pipeline otherwise);
both give the same result.

A topic whose commands fail gets its ``error`` set; the others are unaffected.
"""

from __future__ import annotations

import gc
import json
import time
import weakref
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol

import redis

from mqcore import lag as lagmath
from mqcore.codec import decode_text, partition_count_from_meta
from mqcore.models import (
    ClusterSnapshot,
    ConsumerInfo,
    GroupLag,
    LagExactness,
    LeaseInfo,
    PartitionLag,
    RetryBacklog,
    TopicSnapshot,
)
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


__all__ = [
    "consumer_dicts",
    "gc_paused",
    "snapshot_from_dict",
    "take_snapshot",
    "take_snapshot_dict",
]

_Cmd = Command
# Per client, from the previous pass: stream key -> (fingerprint, last id) and
# (stream key, group) -> (fingerprint, first undelivered id); see take_snapshot_dict.
_CACHE: weakref.WeakKeyDictionary[Any, tuple[dict[str, Any], dict[Any, Any], dict[Any, Any]]] = (
    weakref.WeakKeyDictionary()
)


# --- reply shapes (raw RESP2 or redis-py parsed) --------------------------------------------


def _groups(reply: Any) -> list[tuple[str, int, str, int | None, int | None]]:
    """XINFO GROUPS -> (name, pending, last-delivered-id, entries-read, lag) per group."""
    out: list[tuple[str, int, str, int | None, int | None]] = []
    for g in reply or ():
        if not isinstance(g, dict):  # RESP2: a flat list of name, value, ...
            pairs = iter(g)
            g = dict(zip(pairs, pairs, strict=False))
        if b"name" in g:
            get = g.get
            name, pending, last = get(b"name"), get(b"pending"), get(b"last-delivered-id")
            read, lag = get(b"entries-read"), get(b"lag")
        else:  # parsed by redis-py: str keys
            get = g.get
            name, pending, last = get("name"), get("pending"), get("last-delivered-id")
            read, lag = get("entries-read"), get("lag")
        n_pending = int(pending or 0)
        n_read: int | None = read if read is None or read.__class__ is int else int(read)
        n_lag: int | None = lag if lag is None or lag.__class__ is int else int(lag)
        out.append((decode_text(name), n_pending, decode_text(last), n_read, n_lag))
    return out


def _entry_id(entry: Any) -> str:
    return decode_text(entry[0])


def _pending_idle(reply: Any) -> int | None:
    if not reply:
        return None
    first = reply[0]
    if isinstance(first, dict):
        return int(first["time_since_delivered"])
    return int(first[2])


def _hash(reply: Any) -> dict[Any, Any]:
    if isinstance(reply, dict):
        return reply
    if not reply:
        return {}
    return dict(zip(reply[::2], reply[1::2], strict=True))


def _first_score(reply: Any) -> int | None:
    if not reply:
        return None
    first = reply[0]
    if isinstance(first, list | tuple):
        return int(float(first[1]))
    return int(float(reply[1]))


def _missing(reply: Any) -> bool:
    return isinstance(reply, redis.ResponseError) and "no such key" in str(reply).lower()


def _ok(reply: Any, errors: dict[int, str], owner: int, default: Any = None) -> Any:
    """The reply, or ``default`` for a missing stream; other errors mark the topic."""
    if isinstance(reply, Exception):
        if not _missing(reply):
            errors.setdefault(owner, f"{type(reply).__name__}: {reply}")
        return default
    return reply


# --- the pass ----------------------------------------------------------------------------------


def take_snapshot(admin: Admin, *, topics: Iterable[str] | None, batch: int) -> ClusterSnapshot:
    return snapshot_from_dict(take_snapshot_dict(admin, topics=topics, batch=batch))


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection inside the block (re-enabled after, if it was on).

    A pass allocates a few hundred thousand short-lived, acyclic containers;
    the collector's generation sweeps over them (and the rest of the heap) would
    cost a third of the pass. Reference counting still frees everything.
    """
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def take_snapshot_dict(admin: Admin, *, topics: Iterable[str] | None, batch: int) -> dict[str, Any]:
    """The snapshot as plain dicts: ``dataclasses.asdict`` of a ClusterSnapshot."""
    with gc_paused():
        return _take_snapshot_dict(admin, topics=topics, batch=batch)


def _take_snapshot_dict(
    admin: Admin, *, topics: Iterable[str] | None, batch: int
) -> dict[str, Any]:
    started = time.perf_counter()
    keys, client = admin.keys, admin.client
    runner = Wire(client, batch)
    now = int(time.time() * 1000)
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
    counts = [partition_count_from_meta(_ok(r1[3 * t], errors, t)) for t in range(n_topics)]
    dlq_len = [int(_ok(r1[3 * t + 1], errors, t, 0) or 0) for t in range(n_topics)]
    retry_n = [int(_ok(r1[3 * t + 2], errors, t, 0) or 0) for t in range(n_topics)]
    pipeline_names = sorted(decode_text(x) for x in (_ok(r1[-1], {}, -1) or []))

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
    # entries-read, lag, lease reply index, XPENDING index, XRANGE index, cached first id,
    # fingerprint]
    cluster = bool(admin.config.cluster)
    old_last, old_first, old_lkeys = _CACHE.get(client) or ({}, {}, {})
    new_last: dict[str, tuple[Any, str]] = {}
    new_first: dict[tuple[str, str], tuple[Any, str]] = {}
    new_lkeys: dict[tuple[str, str], tuple[str, str]] = {}
    parts: list[list[tuple[int, list[list[Any]], str | None, int]]] = []
    cmds = []
    add = cmds.append
    beat_at: dict[tuple[int, str], int] = {}
    i = 0
    for t, name in enumerate(names):
        t_parts = []
        for p, key in enumerate(streams[t]):
            infos, length = r2[i], r2[i + 1]
            i += 2
            if isinstance(infos, Exception):
                infos = _ok(infos, errors, t, None)
            if length.__class__ is not int:
                length = int(_ok(length, errors, t, 0) or 0)
            try:
                parsed = _groups(infos)
            except (KeyError, ValueError, TypeError, IndexError) as exc:
                errors.setdefault(t, f"{type(exc).__name__}: {exc}")
                parsed = []
            last_id: str | None = None
            added = None
            for g in parsed:
                if g[3] is not None and g[4] is not None:
                    added = g[3] + g[4]
                    break
            recs: list[list[Any]] = []
            for gname, pending, last, read, lag in parsed:
                if lag == 0:
                    last_id = last
                ident = (key, gname)
                lkeys = old_lkeys.get(ident)
                if lkeys is None:
                    lkeys = (keys.lease(name, gname, p), keys.lease_epoch(name, gname, p))
                new_lkeys[ident] = lkeys
                rec: list[Any] = [gname, pending, last, read, lag, len(cmds), -1, -1, None, None]
                if cluster:  # cluster pipelines refuse MGET: two GETs (same slot, same node)
                    add(("GET", lkeys[0]))
                    add(("GET", lkeys[1]))
                else:
                    add(("MGET", *lkeys))
                add(("PTTL", lkeys[0]))
                if pending > 0:
                    rec[6] = len(cmds)
                    add(("XPENDING", key, gname, "-", "+", 1))
                if lag is None:
                    rec[7] = len(cmds)
                    add(("XRANGE", key, "(" + last, "+", "COUNT", lagmath.COUNT_PAGE))
                elif lag > 0:
                    # the first undelivered entry stays the same while nothing was added,
                    # trimmed or delivered (same entries-added, length, position); a real
                    # position (an id of this stream, not 0-0) also tells a recreated stream
                    mark = (last, added, length)
                    hit = old_first.get(ident) if last != "0-0" else None
                    if hit is not None and hit[0] == mark:
                        rec[8] = hit[1]
                    else:
                        rec[7] = len(cmds)
                        add(("XRANGE", key, "(" + last, "+", "COUNT", 1))
                    rec[9] = mark
                recs.append(rec)
                if (t, gname) not in beat_at:
                    beat_at[t, gname] = len(cmds)
                    add(("HGETALL", keys.consumers(name, gname)))
            last_at = -1
            if last_id is None and length > 0:
                # the last id changes only with XADD (entries-added) - or a recreated stream
                positions = tuple(g[2] for g in parsed)
                known_stream = added is not None and any(x != "0-0" for x in positions)
                mark_l = (added, length, positions) if known_stream else None
                hit_l = old_last.get(key) if mark_l is not None else None
                if hit_l is not None and hit_l[0] == mark_l:
                    last_id = hit_l[1]
                else:
                    last_at = len(cmds)
                    add(("XREVRANGE", key, "+", "-", "COUNT", 1))
                if mark_l is not None:
                    new_last[key] = (mark_l, last_id or "")
            t_parts.append((length, recs, last_id, last_at))
        parts.append(t_parts)
    r3 = runner.run(cmds)

    def fetch_after(key: str) -> Callable[[str], list[str]]:
        """The next pages of a NULL-lag count (rare: a full first page), outside the batches."""

        def page(cursor: str) -> list[str]:
            runner.commands += 1
            return [_entry_id(e) for e in client.xrange(key, "(" + cursor, "+", lagmath.COUNT_PAGE)]

        return page

    out: list[dict[str, Any]] = []
    for t, name in enumerate(names):
        snap: dict[str, Any] | None = None
        if t not in errors:
            try:
                snap = _topic(
                    t, name, dlq_len[t], retry_n[t], now, errors, parts[t], streams[t],
                    r2, retry_at.get(t), r3, beat_at, new_first, new_last, cluster, fetch_after,
                )  # fmt: skip
            except (KeyError, ValueError, TypeError, IndexError, redis.RedisError) as exc:
                errors.setdefault(t, f"{type(exc).__name__}: {exc}")
        if t in errors or snap is None:
            snap = {
                "topic": name,
                "partitions": counts[t],
                "length": 0,
                "dlq_length": dlq_len[t],
                "retry": {"count": retry_n[t], "next_due_at_ms": None, "oldest_due_at_ms": None},
                "groups": [],
                "leases": [],
                "consumers": [],
                "partition_lengths": [],
                "partition_last_ids": [],
                "error": errors.get(t, "unreadable"),
            }
        out.append(snap)
    _CACHE[client] = (new_last, new_first, new_lkeys)
    pipelines = []
    for k, n in enumerate(pipeline_names):
        meta = _hash(_ok(r2[meta_at + k], {}, -1, {}))
        pipelines.append(
            {"pipeline": n, **{decode_text(a): decode_text(b) for a, b in meta.items()}}
        )
    return {
        "taken_at_ms": now,
        "topics": out,
        "redis_run_id": _run_id(client),
        "elapsed_ms": (time.perf_counter() - started) * 1000,
        "commands": runner.commands + 1,
        "pipelines": pipelines,
    }


def _topic(
    t: int,
    name: str,
    dlq_length: int,
    retry_count: int,
    now: int,
    errors: dict[int, str],
    t_parts: list[tuple[int, list[list[Any]], str | None, int]],
    streams: list[str],
    r2: list[Any],
    retry_idx: int | None,
    r3: list[Any],
    beat_at: dict[tuple[int, str], int],
    new_first: dict[tuple[str, str], tuple[Any, str]],
    new_last: dict[str, tuple[Any, str]],
    cluster: bool,
    fetch_after: Callable[[str], Callable[[str], list[str]]],
) -> dict[str, Any]:
    lengths = [x[0] for x in t_parts]
    part_ids: list[str] = []
    for p, (_length, _recs, known, last_at) in enumerate(t_parts):
        if known is None:
            page = _ok(r3[last_at], errors, t, None) if last_at >= 0 else None
            known = _entry_id(page[0]) if page else "0-0"
            if last_at >= 0 and streams[p] in new_last:
                new_last[streams[p]] = (new_last[streams[p]][0], known)
        part_ids.append(known)
    per_group: dict[str, list[dict[str, Any]]] = {}
    leases: list[dict[str, Any]] = []
    owners: dict[str, set[str]] = {}
    for p, (length, recs, _known, _at) in enumerate(t_parts):
        last_id = part_ids[p]
        for (
            gname,
            pending,
            last,
            entries_read,
            lag,
            lease_at,
            pend_at,
            range_at,
            first_id,
            mark,
        ) in recs:
            reason = ""
            exactness = LagExactness.EXACT
            if lag is None:
                first = _ok(r3[range_at], errors, t, None) or []
                page = [_entry_id(e) for e in first]
                lag, exactness, reason = lagmath.count_null_lag(page, fetch_after(streams[p]))
                first_id = page[0] if page else None
            elif range_at >= 0:
                first = r3[range_at]
                if isinstance(first, Exception):
                    first = _ok(first, errors, t, None)
                first_id = _entry_id(first[0]) if first else None
            if mark is not None and first_id is not None and last != "0-0":
                new_first[streams[p], gname] = (mark, first_id)
            oldest = None
            if pend_at >= 0:
                page = r3[pend_at]
                if page.__class__ is list and page and page[0].__class__ is list:
                    oldest = int(page[0][2])  # raw reply: [[id, consumer, idle, deliveries]]
                else:
                    oldest = _pending_idle(_ok(page, errors, t, None))
            group_parts = per_group.get(gname)
            if group_parts is None:
                group_parts = per_group[gname] = []
            group_parts.append(
                lagmath.partition_row(
                    partition=p,
                    last_delivered_id=last,
                    lag=lag,
                    exactness=exactness,
                    reason=reason,
                    first_id=first_id,
                    now_ms=now,
                    pending=pending,
                    oldest_pending_ms=oldest,
                    entries_read=entries_read,
                    length=length,
                    last_id=last_id,
                )
            )
            if cluster:
                a, b = r3[lease_at], r3[lease_at + 1]
                failed = next((x for x in (a, b) if isinstance(x, Exception)), None)
                lease_reply: Any = failed if failed is not None else [a, b]
                ttl = r3[lease_at + 2]
            else:
                lease_reply, ttl = r3[lease_at], r3[lease_at + 1]
            if lease_reply.__class__ is list:
                owner, epoch = lease_reply
            else:
                owner, epoch = _ok(lease_reply, errors, t, None) or (None, None)
            if ttl.__class__ is not int:
                ttl = _ok(ttl, errors, t, -2)
            if owner is not None and ttl.__class__ is int and ttl != -2:
                owner_s = decode_text(owner)
                leases.append(
                    {
                        "group": gname,
                        "partition": p,
                        "owner": owner_s,
                        "ttl_ms": ttl if ttl >= 0 else None,
                        "epoch": _epoch(epoch),
                    }
                )
                owned = owners.get(gname)
                if owned is None:
                    owned = owners[gname] = set()
                owned.add(owner_s)
            else:
                leases.append(
                    {
                        "group": gname,
                        "partition": p,
                        "owner": None,
                        "ttl_ms": None,
                        "epoch": _epoch(epoch),
                    }
                )
    consumers: list[dict[str, Any]] = []
    for gname in sorted(per_group):
        beats = _hash(_ok(r3[beat_at[t, gname]], errors, t, {}))
        stats = {o: {"pending": 0, "idle": -1} for o in owners.get(gname, set())}
        consumers.extend(consumer_dicts(gname, stats, beats, now))
    retry: dict[str, Any] = {"count": retry_count, "next_due_at_ms": None, "oldest_due_at_ms": None}
    if retry_idx is not None:
        retry["oldest_due_at_ms"] = _first_score(_ok(r2[retry_idx], errors, t, None))
        retry["next_due_at_ms"] = _first_score(_ok(r2[retry_idx + 1], errors, t, None))
    if len(per_group) > 1:
        leases.sort(key=lambda x: (x["group"], x["partition"]))
    return {
        "topic": name,
        "partitions": len(t_parts),
        "length": sum(lengths),
        "dlq_length": dlq_length,
        "retry": retry,
        "groups": [group_dict(g, per_group[g]) for g in sorted(per_group)],
        "leases": leases,
        "consumers": consumers,
        "partition_lengths": lengths,
        "partition_last_ids": part_ids,
        "error": None,
    }


def _epoch(raw: Any) -> int:
    if raw is None:
        return 0
    try:
        return int(raw)
    except (TypeError, ValueError):
        return 0


# --- shared shapes (also used by Admin.leases / Admin.consumers) ------------------------------


def group_dict(group: str, partitions: list[dict[str, Any]]) -> dict[str, Any]:
    """A group's snapshot form: :func:`mqcore.lag.group_totals` and its partitions."""
    return {
        "group": group,
        **lagmath.group_totals(partitions),
        "partitions": sorted(partitions, key=lambda p: p["partition"]),
    }


def lease_dict(group: str, partition: int, owner: Any, ttl: Any, epoch: Any) -> dict[str, Any]:
    alive = owner is not None and isinstance(ttl, int) and ttl != -2
    try:
        epoch_n = int(epoch)
    except (TypeError, ValueError):
        epoch_n = 0
    return {
        "group": group,
        "partition": partition,
        "owner": decode_text(owner) if alive else None,
        "ttl_ms": int(ttl) if alive and ttl >= 0 else None,
        "epoch": epoch_n,
    }


def consumer_dicts(
    group: str, stats: dict[str, dict[str, int]], beats: dict[Any, Any], now: int
) -> list[dict[str, Any]]:
    """Consumers of a group: XINFO CONSUMERS stats joined with mqcore heartbeats, by name."""
    hb: dict[str, dict[str, Any]] = {}
    for name, raw in beats.items():
        try:
            data = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            continue
        if isinstance(data, dict):
            hb[decode_text(name)] = data
    out = []
    for name in sorted(set(stats) | set(hb)):
        s = stats.get(name, {"pending": 0, "idle": -1})
        beat = hb.get(name, {})
        last_seen = beat.get("last_seen_ms")
        seen_age = max(0, now - int(last_seen)) if isinstance(last_seen, int | float) else None
        idle = s["idle"] if s["idle"] >= 0 else (seen_age if seen_age is not None else 0)
        held = beat.get("partitions") or []
        cap = beat.get("max_partitions")
        out.append(
            {
                "group": group,
                "name": name,
                "pending": s["pending"],
                "idle_ms": idle,
                "last_seen_ms": seen_age,
                "partitions_held": sorted(int(p) for p in held if isinstance(p, int)),
                "max_partitions": int(cap) if isinstance(cap, int) else None,
            }
        )
    return out


def snapshot_from_dict(data: dict[str, Any]) -> ClusterSnapshot:
    """The dataclasses of a snapshot dict made by :func:`take_snapshot_dict`."""
    topics = []
    for t in data["topics"]:
        groups = [
            GroupLag(
                group=g["group"],
                lag=g["lag"],
                lag_ms=g["lag_ms"],
                pending=g["pending"],
                lag_exact=g["lag_exact"],
                partitions=[
                    PartitionLag(**{**p, "exactness": LagExactness(p["exactness"])})
                    for p in g["partitions"]
                ],
            )
            for g in t["groups"]
        ]
        topics.append(
            TopicSnapshot(
                topic=t["topic"],
                partitions=t["partitions"],
                length=t["length"],
                dlq_length=t["dlq_length"],
                retry=RetryBacklog(**t["retry"]),
                groups=groups,
                leases=[LeaseInfo(**x) for x in t["leases"]],
                consumers=[ConsumerInfo(**c) for c in t["consumers"]],
                partition_lengths=list(t["partition_lengths"]),
                partition_last_ids=list(t["partition_last_ids"]),
                error=t["error"],
            )
        )
    return ClusterSnapshot(
        taken_at_ms=data["taken_at_ms"],
        topics=topics,
        redis_run_id=data["redis_run_id"],
        elapsed_ms=data["elapsed_ms"],
        commands=data["commands"],
        pipelines=data["pipelines"],
    )


def _run_id(client: Any) -> str:
    """Server run id (a restart changes it); on a cluster, the sorted node ids joined."""
    try:
        info = client.info("server")
    except redis.RedisError:
        return ""
    if isinstance(info, dict) and "run_id" in info:
        return str(info["run_id"])
    if isinstance(info, dict):
        ids = sorted(str(v.get("run_id", "")) for v in info.values() if isinstance(v, dict))
        return ",".join(i for i in ids if i)
    return ""
