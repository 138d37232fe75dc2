"""How the Redis under a deployment is doing: memory, evictions, persistence, clients, load,
and its slow log. One bounded read (``INFO``, ``CONFIG GET appendfsync``, ``SLOWLOG GET``).
The slow log is read as command names and key names only (:mod:`mqcore.admin.slowlog`):
the arguments of a slow command (a payload, a script's values) are dropped on reading.

Streams are evicted like any other key under an eviction policy other than
``noeviction``: messages then vanish. :func:`health_risks` names what in a reading can
lose messages (the console's ``redis_eviction`` / ``redis_memory`` alerts and the exit
code of ``mqcore health`` both ask it). Managed Redis services often rename ``CONFIG``;
the fsync policy is then reported as unknown.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import redis

from mqcore.admin.slowlog import slowlog_entries
from mqcore.boundary import redis_errors
from mqcore.codec import decode_text
from mqcore.config import RedisClient

__all__ = ["MEMORY_SHARE_RISK", "SLOWLOG_SAMPLE", "health_risks", "redis_health"]

SLOWLOG_SAMPLE = 32  # newest slow-log entries read per probe
MEMORY_SHARE_RISK = 0.9  # of maxmemory used at or above this: writes soon fail (or evict)


def _num(info: dict[str, Any], key: str) -> float | None:
    value = info.get(key)
    return float(value) if isinstance(value, int | float) else None


def redis_health(client: RedisClient) -> dict[str, Any]:
    """The numbers an operator checks first, as plain data (see the module docstring).

    On Redis Cluster each node has its own; this reads none (``{"cluster": True}``)."""
    if isinstance(client, redis.RedisCluster):
        return {"cluster": True}
    with redis_errors("read Redis health"):
        info: dict[str, Any] = client.info("everything")
        # the raw reply (redis-py's slowlog_get joins the arguments into one text)
        slow = slowlog_entries(client.execute_command("SLOWLOG", "GET", SLOWLOG_SAMPLE))
        try:
            fsync = decode_text(client.config_get("appendfsync").get("appendfsync")) or None
        except redis.ResponseError:  # CONFIG renamed or refused (managed Redis)
            fsync = None
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
        "appendfsync": fsync,
        "aof_last_rewrite_ok": info.get("aof_last_bgrewrite_status") in (None, "ok"),
        "rdb_last_save_s": info.get("rdb_last_save_time"),
        "rdb_last_save_ok": info.get("rdb_last_bgsave_status") in (None, "ok"),
        "connected_clients": info.get("connected_clients"),
        "blocked_clients": info.get("blocked_clients"),
        "ops_per_s": info.get("instantaneous_ops_per_sec"),
        "slowlog": slow,
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
