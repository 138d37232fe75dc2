"""The once-a-minute probes of the Redis under a deployment, each bounded: does a Java
service write here, how is Redis doing (with its slow log), what do the topics' streams
take. The collector's read end asks them all at once (:func:`minute_probe`); the console's
pages and ``mqcore health`` ask one.

Java (:func:`java_kryo_seen`): signs that a Java redis-streaming service writes to the
same Redis through Redisson's Kryo codec: its dead letters and commit frontiers have
Kryo-encoded field names. One pipelined round trip (the newest letter of each DLQ and the
field names of partition 0's frontier hash, for at most ``limit`` topics) lets the console
tell an operator that ``encoding`` should be ``java-kryo`` there.

Redis (:func:`redis_health`): memory, evictions, persistence, clients, load, and its slow
log. One bounded read (``INFO``, ``CONFIG GET appendfsync``, ``SLOWLOG GET``). Streams are
evicted like any other key under an eviction policy other than ``noeviction``: messages then
vanish. :func:`health_risks` names what in a reading can lose messages (the console's
``redis_eviction`` / ``redis_memory`` alerts and the exit code of ``mqcore health`` both ask
it). Managed Redis services often rename ``CONFIG``; the fsync policy is then reported as
unknown.

The slow log (:func:`slowlog_entries`) without what the commands carried: each entry's
command name and key names. ``SLOWLOG GET`` keeps up to 32 arguments of each slow command,
128 bytes each: for an ``XADD`` that is the payload, for an ``EVALSHA`` the values a script
writes. None of it leaves here. The key names are told from the command alone, without
asking Redis (``COMMAND GETKEYS`` would need the whole argument list again): the commands of
the MQ and the console (streams, hashes, sets, sorted sets, strings) name their keys at
known positions; ``EVAL``/``EVALSHA``/``FCALL`` by their ``numkeys`` argument; any other
command shows no keys. A key Redis cut short (``... (N more bytes)``) is still counted but
never named.

Redis Cluster (:func:`cluster_health`): the same numbers for every master and replica,
the slot coverage, the MQ partitions each node holds (from the client's slot table), the
node holding the most and the hottest by ops/s; the minute probe asks it on a cluster.

Memory (:func:`topic_memory`): ``MEMORY USAGE key SAMPLES s`` of every partition stream of
some topics, in one pipeline (s at most :data:`MEMORY_SAMPLES_MAX`; Redis samples that many
nodes of the stream and extrapolates, so the cost does not grow with the stream). Once a
minute the collector measures the next topics in turn within a budget of streams
(:func:`memory_pick`), so a deployment of any size costs the same per minute.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

import redis

from mqcore.boundary import redis_errors
from mqcore.codec import decode_text, kryo
from mqcore.config import RedisClient
from mqcore.errors import InvalidArgumentError, MQError
from mqcore.keys import KeySpace

__all__ = [
    "MEMORY_SAMPLES",
    "MEMORY_SAMPLES_MAX",
    "MEMORY_SHARE_RISK",
    "PROBE_TOPICS",
    "SLOWLOG_SAMPLE",
    "MinuteProbe",
    "cluster_health",
    "command_keys",
    "health_risks",
    "java_kryo_seen",
    "memory_pick",
    "minute_probe",
    "redis_health",
    "slowlog_entries",
    "topic_memory",
]

MEMORY_SAMPLES = 5  # Redis's own default for MEMORY USAGE
MEMORY_SAMPLES_MAX = 50


@dataclass
class MinuteProbe:
    """What :func:`minute_probe` found; a probe that failed leaves its part None and says
    why (``failed``: Java or Redis; ``memory_error``: the memory probe's exception)."""

    java: dict[str, list[str]] | None = None
    redis: dict[str, Any] | None = None
    failed: MQError | None = None
    picked: list[tuple[str, int]] = field(default_factory=list)  # topics measured
    cursor: int = 0  # where the next minute's memory probe starts
    memory: dict[str, list[int | None]] = field(default_factory=dict)
    memory_error: Exception | None = None


def minute_probe(
    client: RedisClient,
    keys: KeySpace,
    names: Sequence[str],
    topics: Sequence[tuple[str, int]],
    *,
    cursor: int,
    budget: int,
    samples: int = MEMORY_SAMPLES,
) -> MinuteProbe:
    """The once-a-minute probes of a deployment's Redis: Java's data among the topics
    ``names``, Redis's health, and the memory of the next of ``topics`` ((name, partitions))
    from ``cursor`` whose streams fit in ``budget`` (:func:`memory_pick`). Never raises for
    a probe's failure."""
    out = MinuteProbe()
    try:
        out.java = java_kryo_seen(client, keys, names)
        if isinstance(client, redis.RedisCluster):
            out.redis = cluster_health(client, keys, topics)
        else:
            out.redis = redis_health(client)
    except MQError as exc:
        out.failed = exc
    out.picked, out.cursor = memory_pick(list(topics), cursor, budget)
    try:
        out.memory = topic_memory(client, keys, out.picked, samples=samples) if out.picked else {}
    except Exception as exc:  # the memory probe's failure never fails the pass
        out.memory_error = exc
    return out


def memory_pick(
    topics: list[tuple[str, int]], cursor: int, budget: int
) -> tuple[list[tuple[str, int]], int]:
    """The topics (name, partitions) from ``cursor`` on (wrapping) whose streams fit in
    ``budget`` (always at least one), and the cursor of the next minute."""
    if not topics:
        return [], 0
    start = cursor % len(topics)
    picked: list[tuple[str, int]] = []
    streams = 0
    for i in range(len(topics)):
        name, parts = topics[(start + i) % len(topics)]
        if picked and streams + parts > budget:
            break
        picked.append((name, parts))
        streams += parts
    return picked, (start + len(picked)) % len(topics)


# --- Java ----------------------------------------------------------------------------------------
PROBE_TOPICS = 50  # topics looked at per probe


def java_kryo_seen(
    client: RedisClient, keys: KeySpace, topics: Sequence[str], *, limit: int = PROBE_TOPICS
) -> dict[str, list[str]]:
    """Topics whose newest dead letter (``dlq``) or frontier hash (``frontier``) Java wrote
    through Redisson's Kryo codec, among the first ``limit`` of ``topics``."""
    names = list(topics)[: max(0, limit)]
    if not names:
        return {"dlq": [], "frontier": []}
    with redis_errors("probe Java data"):
        pipe = client.pipeline(transaction=False)
        for topic in names:
            pipe.xrevrange(keys.dlq(topic), "+", "-", count=1)
            pipe.hkeys(keys.commit_frontier(topic, 0))
        replies = pipe.execute(raise_on_error=False)
    dlq, frontier = [], []
    for i, topic in enumerate(names):
        letters, fields = replies[2 * i], replies[2 * i + 1]
        if _any_kryo(_names(letters)):
            dlq.append(topic)
        if isinstance(fields, list) and _any_kryo(fields):
            frontier.append(topic)
    return {"dlq": dlq, "frontier": frontier}


def _names(letters: Any) -> list[Any]:
    if not isinstance(letters, list) or not letters:
        return []
    fields = letters[0][1]
    return list(fields) if isinstance(fields, dict) else list(fields[0::2])


def _any_kryo(names: Sequence[Any]) -> bool:
    return any(isinstance(n, bytes) and kryo.looks_kryo(n) for n in names)


# --- Redis ---------------------------------------------------------------------------------------
SLOWLOG_SAMPLE = 32  # newest slow-log entries read per probe
MEMORY_SHARE_RISK = 0.9  # of maxmemory used at or above this: writes soon fail (or evict)


def _num(info: Mapping[str, Any], key: str) -> float | None:
    value = info.get(key)
    return float(value) if isinstance(value, int | float) else None


def redis_health(client: RedisClient) -> dict[str, Any]:
    """The numbers an operator checks first, as plain data (see the module docstring).

    On Redis Cluster each node has its own; this reads none (``{"cluster": True}``)."""
    if isinstance(client, redis.RedisCluster):
        return {"cluster": True}
    with redis_errors("read Redis health"):
        info: dict[str, Any] = client.info("everything")
        slow = client.execute_command("SLOWLOG", "GET", SLOWLOG_SAMPLE)
        try:
            fsync = client.config_get("appendfsync").get("appendfsync")
        except redis.ResponseError:  # CONFIG renamed or refused (managed Redis)
            fsync = None
    return _node_health(info, slow, fsync)


def _node_health(info: Mapping[str, Any], slow: Any, fsync: Any) -> dict[str, Any]:
    """One Redis's numbers of :func:`redis_health` from its ``INFO``, raw ``SLOWLOG GET``
    reply (redis-py's ``slowlog_get`` joins the arguments into one text) and
    ``appendfsync`` (None: unknown)."""
    policy = str(info.get("maxmemory_policy") or "")
    used, limit = _num(info, "used_memory"), _num(info, "maxmemory")
    return {
        "version": str(info.get("redis_version") or ""),
        "role": str(info.get("role") or ""),
        "uptime_s": info.get("uptime_in_seconds"),
        "used_memory": used,
        "used_memory_peak": _num(info, "used_memory_peak"),
        "maxmemory": limit or None,
        "memory_share": (used / limit) if used is not None and limit else None,
        "fragmentation": _num(info, "mem_fragmentation_ratio"),
        "maxmemory_policy": policy,
        "evicting_policy": bool(policy) and policy != "noeviction",
        "evicted_keys": info.get("evicted_keys"),
        "aof_enabled": bool(info.get("aof_enabled")),
        "appendfsync": decode_text(fsync) or None,
        "aof_last_rewrite_ok": info.get("aof_last_bgrewrite_status") in (None, "ok"),
        "rdb_last_save_s": info.get("rdb_last_save_time"),
        "rdb_last_save_ok": info.get("rdb_last_bgsave_status") in (None, "ok"),
        "connected_clients": info.get("connected_clients"),
        "blocked_clients": info.get("blocked_clients"),
        "ops_per_s": info.get("instantaneous_ops_per_sec"),
        "slowlog": slowlog_entries(slow),
    }


CLUSTER_SLOTS = 16384


def cluster_health(
    client: redis.RedisCluster, keys: KeySpace, topics: Sequence[tuple[str, int]]
) -> dict[str, Any]:
    """Redis Cluster's health: :func:`redis_health`'s numbers for every master and replica
    (``nodes``, by ``host:port``, with the MQ partitions each holds), the slot coverage
    (``CLUSTER INFO``), the node holding the most partitions and the hottest by ops/s.
    One ``INFO``, ``SLOWLOG GET`` and ``CONFIG GET appendfsync`` per node; which node holds
    a partition is the client's slot table's (no command)."""
    every = redis.RedisCluster.ALL_NODES
    nodes_of: Any = client  # redis-py's cluster client is untyped
    with redis_errors("read Redis Cluster health"):
        infos = client.info("everything", target_nodes=every)
        slows = nodes_of.execute_command("SLOWLOG", "GET", SLOWLOG_SAMPLE, target_nodes=every)
        try:
            fsyncs = nodes_of.execute_command("CONFIG", "GET", "appendfsync", target_nodes=every)
        except redis.ResponseError:  # CONFIG renamed or refused (managed Redis)
            fsyncs = {}
        state = client.cluster_info(target_nodes=redis.RedisCluster.RANDOM)
    partitions: dict[str, int] = {}
    for topic, count in topics:
        for p in range(max(0, count)):
            node = nodes_of.get_node_from_key(keys.partition(topic, p))
            name = str(node.name) if node is not None else "?"
            partitions[name] = partitions.get(name, 0) + 1
    nodes = []
    for name in sorted(infos if isinstance(infos, dict) else {}):
        info = infos[name]
        if not isinstance(info, dict):
            continue
        fsync = fsyncs.get(name) if isinstance(fsyncs, dict) else None
        value = None
        if isinstance(fsync, dict):
            value = fsync.get("appendfsync", fsync.get(b"appendfsync"))
        slow = slows.get(name) if isinstance(slows, dict) else None
        node = _node_health(info, slow, value)
        node.update(node=name, partitions=partitions.get(name, 0))
        nodes.append(node)
    ok = int((state or {}).get("cluster_slots_ok") or 0)
    most = max(nodes, key=lambda n: (n["partitions"], n["node"]), default=None)
    hottest = max(nodes, key=lambda n: (n["ops_per_s"] or 0, n["node"]), default=None)
    return {
        "cluster": True,
        "state": str((state or {}).get("cluster_state") or ""),
        "slots_assigned": int((state or {}).get("cluster_slots_assigned") or 0),
        "slots_ok": ok,
        "slot_coverage": ok / CLUSTER_SLOTS,
        "nodes": nodes,
        "most_partitions": most["node"] if most else None,
        "hottest": hottest["node"] if hottest else None,
    }


def health_risks(health: Mapping[str, Any]) -> list[str]:
    """What in a :func:`redis_health` reading can lose messages: ``"eviction"`` (a policy
    other than ``noeviction``, or keys were evicted since Redis started) and ``"memory"``
    (``memory_share`` at or above :data:`MEMORY_SHARE_RISK`). Empty for Redis Cluster."""
    if health.get("cluster"):
        return []
    out = []
    if health.get("evicting_policy") or int(health.get("evicted_keys") or 0):
        out.append("eviction")
    share = health.get("memory_share")
    if isinstance(share, int | float) and share >= MEMORY_SHARE_RISK:
        out.append("memory")
    return out


# --- the slow log --------------------------------------------------------------------------------
# commands whose first argument is their one key
_FIRST_KEY = frozenset({
    "XADD", "XRANGE", "XREVRANGE", "XLEN", "XACK", "XDEL", "XTRIM", "XPENDING", "XCLAIM",
    "XAUTOCLAIM", "XSETID",
    "HSET", "HSETNX", "HGET", "HMGET", "HMSET", "HGETALL", "HDEL", "HLEN", "HEXISTS", "HKEYS",
    "HVALS", "HSCAN", "HINCRBY", "HSTRLEN",
    "SADD", "SREM", "SMEMBERS", "SISMEMBER", "SMISMEMBER", "SCARD", "SSCAN", "SRANDMEMBER",
    "SPOP",
    "ZADD", "ZREM", "ZRANGE", "ZRANGEBYSCORE", "ZREVRANGE", "ZREVRANGEBYSCORE", "ZRANGEBYLEX",
    "ZCARD", "ZCOUNT", "ZSCORE", "ZMSCORE", "ZRANK", "ZREVRANK", "ZSCAN", "ZINCRBY", "ZPOPMIN",
    "ZPOPMAX", "ZREMRANGEBYSCORE", "ZREMRANGEBYRANK",
    "GET", "SET", "SETNX", "SETEX", "PSETEX", "GETSET", "GETDEL", "GETEX", "INCR", "INCRBY",
    "DECR", "DECRBY", "APPEND", "STRLEN",
    "EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT", "PERSIST", "TTL", "PTTL", "TYPE", "DUMP",
    "RESTORE",
    "LPUSH", "RPUSH", "LPOP", "RPOP", "LRANGE", "LLEN", "LTRIM",
})  # fmt: skip
# commands whose every argument is a key
_ALL_KEYS = frozenset({"DEL", "UNLINK", "EXISTS", "TOUCH", "MGET", "WATCH"})
# commands whose first two arguments are keys
_TWO_KEYS = frozenset({"COPY", "RENAME", "RENAMENX", "SMOVE"})
# container commands, named with their subcommand; after these subcommands, one key
_SUB_KEY = {
    "XINFO": frozenset({"STREAM", "GROUPS", "CONSUMERS"}),
    "XGROUP": frozenset({"CREATE", "SETID", "DESTROY", "CREATECONSUMER", "DELCONSUMER"}),
    "MEMORY": frozenset({"USAGE"}),
    "OBJECT": frozenset({"ENCODING", "FREQ", "IDLETIME", "REFCOUNT"}),
    **dict.fromkeys(("CONFIG", "CLIENT", "SCRIPT", "FUNCTION", "CLUSTER", "SLOWLOG", "ACL"),
                    frozenset[str]()),
}  # fmt: skip
_SCRIPTS = frozenset({"EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO"})
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_|.-]{0,39}")
_MORE_ARGS = re.compile(r"\.\.\. \(\d+ more arguments\)")  # Redis keeps 32 arguments
_CUT_SHORT = re.compile(r"\.\.\. \(\d+ more bytes\)$")  # and 128 bytes of each


def command_keys(args: Sequence[str]) -> tuple[str, list[str]]:
    """The command name (``XINFO GROUPS``: with its subcommand) and the key names of one
    command's arguments ``args`` as the slow log kept them; never an argument's value."""
    name = args[0].upper() if args and _NAME.fullmatch(args[0]) else "?"
    rest = list(args[1:])
    if rest and _MORE_ARGS.fullmatch(rest[-1]):
        rest.pop()
    sub = rest[0].upper() if name in _SUB_KEY and rest and _NAME.fullmatch(rest[0]) else ""
    if sub:
        return f"{name} {sub}", rest[1:2] if sub in _SUB_KEY[name] else []
    if name in _FIRST_KEY:
        return name, rest[:1]
    if name in _ALL_KEYS:
        return name, rest
    if name in _TWO_KEYS:
        return name, rest[:2]
    if name in _SCRIPTS:
        return name, rest[2 : 2 + _count(rest[1:2])]
    if name in ("XREAD", "XREADGROUP"):
        upper = [a.upper() for a in rest]
        if "STREAMS" in upper:
            streams = rest[upper.index("STREAMS") + 1 :]
            return name, streams[: len(streams) // 2]
    return name, []


def _count(arg: Sequence[str]) -> int:
    text = arg[0] if arg else ""
    return int(text) if text.isdigit() and len(text) < 7 else 0


def slowlog_entries(raw: Any) -> list[dict[str, Any]]:
    """Rows of a raw ``SLOWLOG GET`` reply: id, start (s), duration (µs), the command name
    and its key names (``keys``; ``cut_keys``: keys Redis cut short, not named)."""
    out = []
    for entry in raw if isinstance(raw, list) else []:
        if not isinstance(entry, list | tuple) or len(entry) < 4:
            continue
        # Redis Enterprise puts a complexity figure before the arguments
        words = entry[3] if isinstance(entry[3], list) else (entry[4] if len(entry) > 4 else [])
        name, keys = command_keys([decode_text(w) for w in words])
        whole = [k for k in keys if not _CUT_SHORT.search(k)]
        out.append(
            {
                "id": int(entry[0]),
                "at_s": int(entry[1]),
                "duration_us": int(entry[2]),
                "command": name,
                "keys": whole,
                "cut_keys": len(keys) - len(whole),
            }
        )
    return out


# --- memory --------------------------------------------------------------------------------------
def topic_memory(
    client: RedisClient,
    keys: KeySpace,
    topics: Sequence[tuple[str, int]],
    *,
    samples: int = MEMORY_SAMPLES,
) -> dict[str, list[int | None]]:
    """``MEMORY USAGE`` in bytes of each partition stream of each (topic, partitions), in one
    pipeline; None for a stream that does not exist (Redis answers nil for it)."""
    if not 1 <= samples <= MEMORY_SAMPLES_MAX:
        raise InvalidArgumentError(f"samples must be 1..{MEMORY_SAMPLES_MAX}")
    with redis_errors("probe memory"):
        pipe = client.pipeline(transaction=False)
        for topic, partitions in topics:
            for p in range(max(0, partitions)):
                pipe.memory_usage(keys.partition(topic, p), samples)
        replies = iter(pipe.execute())
    return {
        topic: [r if isinstance(r, int) else None for r in islice(replies, max(0, partitions))]
        for topic, partitions in topics
    }
