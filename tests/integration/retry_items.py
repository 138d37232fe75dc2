"""Retry items written exactly as SCHEMA (and Java's scheduler) lays them out."""

from __future__ import annotations

import json
import uuid

import redis

from mqcore.keys import KeySpace


def schedule(
    r: redis.Redis | redis.RedisCluster,
    ks: KeySpace,
    topic: str,
    partition: int,
    payload: str,
    *,
    due_ms: int,
    retry_count: int = 1,
    key: str | None = None,
    original_id: str = "1-0",
    item_topic: str | None = None,
) -> str:
    item = ks.retry_item(topic, uuid.uuid4().hex)
    fields = {
        "topic": topic if item_topic is None else item_topic,
        "partitionId": str(partition),
        "payload": payload,
        "headers": json.dumps(
            {"partitionId": str(partition), "x-original-message-id": original_id}
        ),
        "retryCount": str(retry_count),
        "maxRetries": "3",
        "originalMessageId": original_id,
    }
    if key is not None:
        fields["key"] = key
    r.hset(item, mapping=fields)
    r.zadd(ks.retry_zset(topic), {item: due_ms})
    return item
