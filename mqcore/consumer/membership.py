"""Who is in the group: consumer heartbeats and the fair share of partitions.

Each consumer records a heartbeat in the group's consumers hash
(``keys.consumers``). A consumer is live while its heartbeat is fresher than
the lease TTL; with N live consumers each takes at most ``ceil(P / N)`` of the
P partitions. Heartbeats far older than that are pruned.
"""

from __future__ import annotations

import json
import logging
import math
import os
import socket

import redis

from mqcore.boundary import translate
from mqcore.clock import now_ms
from mqcore.codec import decode_text
from mqcore.config import RedisClient

__all__ = ["fair_share", "live_consumers", "remove_heartbeat", "write_heartbeat"]

log = logging.getLogger("mqcore.consumer")

_HEARTBEAT_PRUNE_MS = 60_000


def write_heartbeat(
    client: RedisClient,
    key: str,
    name: str,
    *,
    partitions: list[int],
    max_partitions: int | None,
) -> None:
    """Record that ``name`` is alive now and owns ``partitions``."""
    record = {
        "last_seen_ms": now_ms(),
        "partitions": partitions,
        "max_partitions": max_partitions,
        "host": socket.gethostname(),
        "pid": os.getpid(),
    }
    try:
        client.hset(key, name, json.dumps(record))
    except redis.RedisError as exc:
        raise translate(exc, "heartbeat") from exc


def live_consumers(client: RedisClient, key: str, name: str, *, lease_ttl_ms: int) -> int:
    """How many consumers (``name`` included) have a heartbeat fresher than the lease TTL."""
    try:
        records = client.hgetall(key)
    except redis.RedisError as exc:
        raise translate(exc, "consumers") from exc
    now = now_ms()
    live, stale = {name}, []
    for raw_name, raw in records.items():
        peer = decode_text(raw_name)
        try:
            seen = int(json.loads(raw)["last_seen_ms"])
        except (ValueError, KeyError, TypeError):
            continue
        age = now - seen
        if age <= lease_ttl_ms:
            live.add(peer)
        elif age > max(_HEARTBEAT_PRUNE_MS, 4 * lease_ttl_ms):
            stale.append(peer)
    if stale:
        try:
            client.hdel(key, *stale)
        except redis.RedisError as exc:
            log.warning("pruning stale heartbeats failed: %s", exc)
    return len(live)


def remove_heartbeat(client: RedisClient, key: str, name: str) -> None:
    """Forget ``name`` on a clean stop (a failure is logged: the heartbeat ages out)."""
    try:
        client.hdel(key, name)
    except redis.RedisError as exc:
        log.warning("heartbeat removal failed: %s", exc)


def fair_share(partitions: int, live: int, max_partitions: int | None) -> int:
    """The most partitions one of ``live`` consumers may own."""
    return min(math.ceil(partitions / live), max_partitions or partitions)
