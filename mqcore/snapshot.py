"""One pass over a whole deployment: the data behind :meth:`mqcore.admin.Admin.snapshot`.

Command plan (every command bounded, pipelined ``batch`` at a time; on Redis
Cluster redis-py's cluster pipeline groups them by slot):

1. per topic: ``HGET meta partitionCount``, ``XLEN dlq``, ``ZCARD retry``;
   ``SMEMBERS`` of the pipeline set;
2. per partition: ``XINFO GROUPS``, ``XINFO STREAM`` (length and last id, O(1));
   per topic with retries: ``ZRANGE 0 0`` and ``ZRANGEBYSCORE now +inf LIMIT 0 1``;
   per pipeline: ``HGETALL`` of its checkpoint meta;
3. per group x partition: ``MGET lease epoch`` (same slot), ``XPENDING - + 1``
   only when something is pending, ``XRANGE (last-delivered + COUNT 1`` only when
   lag > 0 (lag in time) or ``COUNT 1000`` when Redis reports NULL lag (bounded
   count, marked APPROXIMATE when the page is full); per group: ``HGETALL`` of
   the heartbeat hash;
4. ``PTTL`` of the leases that have an owner.

A topic whose commands fail gets its ``error`` set; the others are unaffected.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import redis

from mqcore.boundary import redis_errors
from mqcore.models import ClusterSnapshot, RetryBacklog, TopicSnapshot

if TYPE_CHECKING:
    from mqcore.admin import Admin

__all__ = ["take_snapshot"]

_NULL_LAG_PAGE = 1000


@dataclass
class _Call:
    owner: int  # topic index (-1: not topic-scoped)
    name: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    reply: Any = None


class _Runner:
    """Runs calls in pipelines of ``batch``; errors stay in ``reply`` as exceptions."""

    def __init__(self, client: Any, batch: int) -> None:
        self.client = client
        self.batch = max(1, batch)
        self.commands = 0

    def run(self, calls: list[_Call]) -> None:
        for start in range(0, len(calls), self.batch):
            chunk = calls[start : start + self.batch]
            with redis_errors("snapshot"):
                pipe = self.client.pipeline(transaction=False)
                for c in chunk:
                    getattr(pipe, c.name)(*c.args, **c.kwargs)
                replies = pipe.execute(raise_on_error=False)
            for c, reply in zip(chunk, replies, strict=True):
                if isinstance(reply, redis.ConnectionError | redis.TimeoutError):
                    with redis_errors("snapshot"):
                        raise reply
                c.reply = reply
            self.commands += len(chunk)


def _missing(reply: Any) -> bool:
    return isinstance(reply, redis.ResponseError) and "no such key" in str(reply).lower()


def _ok(reply: Any, errors: dict[int, str], owner: int, default: Any = None) -> Any:
    """The reply, or ``default`` for a missing stream; other errors mark the topic."""
    if isinstance(reply, Exception):
        if _missing(reply):
            return default
        errors.setdefault(owner, f"{type(reply).__name__}: {reply}")
        return default
    return reply


def take_snapshot(admin: Admin, *, topics: Iterable[str] | None, batch: int) -> ClusterSnapshot:
    from mqcore.admin import (
        _consumer_infos,
        _lease_info,
        _retry_backlog,
        combine_group_lag,
        decode_text,
        partition_count_from_meta,
    )

    started = time.perf_counter()
    keys, client = admin.keys, admin.client
    runner = _Runner(client, batch)
    now = int(time.time() * 1000)
    names = sorted(set(topics)) if topics is not None else admin.topics()
    errors: dict[int, str] = {}

    # 1. per topic
    a_calls: list[_Call] = []
    for t, name in enumerate(names):
        a_calls.append(_Call(t, "hget", (keys.meta(name), "partitionCount")))
        a_calls.append(_Call(t, "xlen", (keys.dlq(name),)))
        a_calls.append(_Call(t, "zcard", (keys.retry_zset(name),)))
    pipelines_call = _Call(-1, "smembers", (keys.pipelines(),))
    runner.run([*a_calls, pipelines_call])
    counts = [
        partition_count_from_meta(_ok(a_calls[3 * t].reply, errors, t)) for t in range(len(names))
    ]
    dlq_len = [int(_ok(a_calls[3 * t + 1].reply, errors, t, 0) or 0) for t in range(len(names))]
    retry_n = [int(_ok(a_calls[3 * t + 2].reply, errors, t, 0) or 0) for t in range(len(names))]

    # 2. per partition
    groups_calls: dict[tuple[int, int], _Call] = {}
    stream_calls: dict[tuple[int, int], _Call] = {}
    retry_calls: dict[int, tuple[_Call, _Call]] = {}
    for t, name in enumerate(names):
        for p in range(counts[t]):
            key = keys.partition(name, p)
            groups_calls[t, p] = _Call(t, "xinfo_groups", (key,))
            stream_calls[t, p] = _Call(t, "xinfo_stream", (key,))
        if retry_n[t]:
            zset = keys.retry_zset(name)
            retry_calls[t] = (
                _Call(t, "zrange", (zset, 0, 0), {"withscores": True}),
                _Call(
                    t,
                    "zrangebyscore",
                    (zset, now, "+inf"),
                    {"start": 0, "num": 1, "withscores": True},
                ),
            )
    pipeline_names = sorted(decode_text(x) for x in (_ok(pipelines_call.reply, {}, -1) or []))
    meta_calls = [_Call(-1, "hgetall", (keys.checkpoint_meta(n),)) for n in pipeline_names]
    runner.run(
        [*groups_calls.values(), *stream_calls.values()]
        + [c for pair in retry_calls.values() for c in pair]
        + meta_calls
    )

    # 3. per group x partition
    group_info: dict[tuple[int, int], list[dict[str, Any]]] = {
        tp: _ok(c.reply, errors, tp[0], []) or [] for tp, c in groups_calls.items()
    }
    lease_calls: dict[tuple[int, str, int], _Call] = {}
    epoch_calls: dict[tuple[int, str, int], _Call] = {}
    cluster = admin.config.cluster
    pending_calls: dict[tuple[int, str, int], _Call] = {}
    range_calls: dict[tuple[int, str, int], _Call] = {}
    beat_calls: dict[tuple[int, str], _Call] = {}
    for (t, p), infos in group_info.items():
        name = names[t]
        key = keys.partition(name, p)
        for g in infos:
            gname = decode_text(g["name"])
            ident = (t, gname, p)
            lease_key, epoch_key = keys.lease(name, gname, p), keys.lease_epoch(name, gname, p)
            if cluster:  # cluster pipelines refuse MGET: two GETs (same slot, same node)
                lease_calls[ident] = _Call(t, "get", (lease_key,))
                epoch_calls[ident] = _Call(t, "get", (epoch_key,))
            else:
                lease_calls[ident] = _Call(t, "mget", ([lease_key, epoch_key],))
            if int(g.get("pending") or 0) > 0:
                pending_calls[ident] = _Call(t, "xpending_range", (key, gname, "-", "+", 1))
            lag = g.get("lag")
            if lag is None or int(lag) > 0:
                last = decode_text(g["last-delivered-id"])
                count = 1 if lag is not None else _NULL_LAG_PAGE
                range_calls[ident] = _Call(t, "xrange", (key, "(" + last, "+", count))
            if (t, gname) not in beat_calls:
                beat_calls[t, gname] = _Call(t, "hgetall", (keys.consumers(name, gname),))
    runner.run(
        [
            *lease_calls.values(),
            *epoch_calls.values(),
            *pending_calls.values(),
            *range_calls.values(),
            *beat_calls.values(),
        ]
    )
    for ident, ec in epoch_calls.items():
        lc = lease_calls[ident]
        failed = next((x for x in (lc.reply, ec.reply) if isinstance(x, Exception)), None)
        lc.reply = failed if failed is not None else [lc.reply, ec.reply]

    # 4. lease time left, for owned leases only
    ttl_calls: dict[tuple[int, str, int], _Call] = {}
    for ident, c in lease_calls.items():
        reply = _ok(c.reply, errors, ident[0], [None, None])
        if reply and reply[0] is not None:
            ttl_calls[ident] = _Call(
                ident[0], "pttl", (keys.lease(names[ident[0]], ident[1], ident[2]),)
            )
    runner.run(list(ttl_calls.values()))

    helpers = (_consumer_infos, _lease_info, _retry_backlog, combine_group_lag, decode_text)
    out: list[TopicSnapshot] = []
    for t, name in enumerate(names):
        snap: TopicSnapshot | None = None
        try:
            snap = _topic(
                admin, t, name, counts[t], dlq_len[t], retry_n[t], now, errors,
                group_info, stream_calls, retry_calls, lease_calls, pending_calls,
                range_calls, beat_calls, ttl_calls,
                helpers=helpers,
            )  # fmt: skip
        except (KeyError, ValueError, TypeError, IndexError) as exc:
            errors.setdefault(t, f"{type(exc).__name__}: {exc}")
        if t in errors or snap is None:
            snap = TopicSnapshot(
                topic=name,
                partitions=counts[t],
                length=0,
                dlq_length=dlq_len[t],
                retry=RetryBacklog(retry_n[t], None, None),
                groups=[],
                leases=[],
                consumers=[],
                error=errors.get(t, "unreadable"),
            )
        out.append(snap)
    pipelines = []
    for n, c in zip(pipeline_names, meta_calls, strict=True):
        meta = _ok(c.reply, {}, -1, {}) or {}
        pipelines.append(
            {"pipeline": n, **{decode_text(k): decode_text(v) for k, v in meta.items()}}
        )
    run_id = _run_id(client)
    return ClusterSnapshot(
        taken_at_ms=now,
        topics=out,
        redis_run_id=run_id,
        elapsed_ms=(time.perf_counter() - started) * 1000,
        commands=runner.commands + 1,
        pipelines=pipelines,
    )


def _topic(
    admin: Admin,
    t: int,
    name: str,
    count: int,
    dlq_length: int,
    retry_count: int,
    now: int,
    errors: dict[int, str],
    group_info: dict[tuple[int, int], list[dict[str, Any]]],
    stream_calls: dict[tuple[int, int], _Call],
    retry_calls: dict[int, tuple[_Call, _Call]],
    lease_calls: dict[tuple[int, str, int], _Call],
    pending_calls: dict[tuple[int, str, int], _Call],
    range_calls: dict[tuple[int, str, int], _Call],
    beat_calls: dict[tuple[int, str], _Call],
    ttl_calls: dict[tuple[int, str, int], _Call],
    helpers: tuple[Any, ...],
) -> TopicSnapshot:
    consumer_infos, lease_info, retry_backlog, combine, decode = helpers
    streams = [_ok(stream_calls[t, p].reply, errors, t) for p in range(count)]
    lengths = [int(s["length"]) if s else 0 for s in streams]
    last_ids = [decode(s["last-generated-id"]) if s else "0-0" for s in streams]
    per_group: dict[str, list[Any]] = {}
    leases = []
    owners: dict[str, set[str]] = {}
    for p in range(count):
        key = admin.keys.partition(name, p)
        for g in group_info[t, p]:
            gname = decode(g["name"])
            ident = (t, gname, p)
            first = _ok(range_calls[ident].reply, errors, t, []) if ident in range_calls else []
            oldest = (
                _ok(pending_calls[ident].reply, errors, t, []) if ident in pending_calls else []
            )
            lag = admin._partition_lag(
                key, p, g, streams[p], first, oldest, now, cap=_NULL_LAG_PAGE
            )
            per_group.setdefault(gname, []).append(lag)
            owner, epoch = _ok(lease_calls[ident].reply, errors, t, [None, None]) or [None, None]
            ttl = _ok(ttl_calls[ident].reply, errors, t, -2) if ident in ttl_calls else -2
            info = lease_info(gname, p, owner, ttl, epoch)
            leases.append(info)
            if info.owner:
                owners.setdefault(gname, set()).add(info.owner)
    consumers = []
    for gname in sorted(per_group):
        beats = _ok(beat_calls[t, gname].reply, errors, t, {}) or {}
        stats = {o: {"pending": 0, "idle": -1} for o in owners.get(gname, set())}
        consumers.extend(consumer_infos(gname, stats, beats, now))
    if t in retry_calls:
        oldest_due, next_due = (_ok(c.reply, errors, t, []) for c in retry_calls[t])
        retry = retry_backlog(retry_count, oldest_due, next_due)
    else:
        retry = RetryBacklog(retry_count, None, None)
    return TopicSnapshot(
        topic=name,
        partitions=count,
        length=sum(lengths),
        dlq_length=dlq_length,
        retry=retry,
        groups=[combine(g, per_group[g]) for g in sorted(per_group)],
        leases=sorted(leases, key=lambda x: (x.group, x.partition)),
        consumers=consumers,
        partition_lengths=lengths,
        partition_last_ids=last_ids,
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
