"""Test data written with raw commands exactly the way SCHEMA says Java writes it.

Used by the admin/DLQ tests (and as the Java-interop fixture): nothing here goes
through mqcore's write paths, so reading it back proves mqcore reads Java's layout.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import redis

from mqcore.keys import KeySpace


def iso_now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def create_topic(
    r: redis.Redis | Any,
    keys: KeySpace,
    topic: str,
    partitions: int,
    groups: tuple[str, ...] = ("default-group",),
) -> None:
    """Registry set, meta hash, partitions set and groups (MKSTREAM), as Java's admin does."""
    r.sadd(keys.registry(), topic)
    r.hset(keys.meta(topic), mapping={"partitionCount": partitions})
    for p in range(partitions):
        key = keys.partition(topic, p)
        r.sadd(keys.partitions_set(topic), key)
        for g in groups:
            r.xgroup_create(key, g, id="0", mkstream=True)


def partition_fields(
    topic: str,
    partition: int,
    payload: str | bytes,
    *,
    key: str | None = None,
    headers: dict[str, str] | None = None,
    retry_count: int = 0,
    max_retries: int = 3,
) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "payload": payload,
        "timestamp": iso_now(),
        "retryCount": retry_count,
        "maxRetries": max_retries,
        "topic": topic,
        "partitionId": partition,
        "headers": json.dumps({"partitionId": str(partition), **(headers or {})}),
    }
    if key is not None:
        fields["key"] = key
    return fields


def add_messages(
    r: redis.Redis | Any, keys: KeySpace, topic: str, partition: int, n: int, prefix: str = "m"
) -> list[str]:
    pipe = r.pipeline(transaction=False)
    for i in range(n):
        pipe.xadd(
            keys.partition(topic, partition), partition_fields(topic, partition, f"{prefix}{i}")
        )
    return [x.decode() for x in pipe.execute()]


def java_dlq_letter(
    r: redis.Redis | Any,
    keys: KeySpace,
    topic: str,
    partition: int,
    payload: str | bytes,
    *,
    key: str | None = None,
    original_id: str = "1-0",
    retry_count: int = 3,
    extra_headers: dict[str, str] | None = None,
    entry_id: str = "*",
) -> str:
    """A DLQ entry as Java writes it: top-level ``partitionId`` is always 0 (Java bug)."""
    headers = {"partitionId": str(partition), **(extra_headers or {})}
    if key is not None:
        headers["key"] = key
    fields = {
        "originalTopic": topic,
        "payload": payload,
        "timestamp": iso_now(),
        "failedAt": iso_now(),
        "retryCount": retry_count,
        "partitionId": 0,
        "headers": json.dumps(headers),
        "originalMessageId": original_id,
        "maxRetries": 3,
    }
    return str(r.xadd(keys.dlq(topic), fields, id=entry_id).decode())
