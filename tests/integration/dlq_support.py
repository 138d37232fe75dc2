"""Test data for the dead-letter and audit tests: a topic, raw DLQ letters, role users."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import redis
from django.contrib.auth.models import Group, User
from django.test import Client

from dashboard.models import GroupTopicScope
from dashboard.permissions import roles_sync
from mqcore.config import MQConfig
from mqcore.topics import Topics

PASSWORD = "pw-for-tests-123"


def make_topic(cfg: MQConfig, topic: str = "orders", partitions: int = 2) -> None:
    Topics(cfg).create(topic, partitions)


def add_letters(
    r: redis.Redis,
    cfg: MQConfig,
    topic: str,
    count: int,
    *,
    partitions: int = 2,
    payload: Callable[[int], str | bytes] = lambda i: json.dumps({"order": i}),
    headers: Callable[[int], dict[str, str]] | None = None,
    key: Callable[[int], str] = lambda i: f"k{i}",
) -> list[str]:
    """XADD ``count`` letters with the DLQ fields of docs/redis-layout.md; ids oldest first."""
    ids: list[str] = []
    pipe = r.pipeline(transaction=False)
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    for i in range(count):
        part = i % partitions
        hdrs = {
            "partitionId": str(part),
            "key": key(i),
            "x-runtime-error-message": f"boom {i}",
            **(headers(i) if headers else {}),
        }
        pipe.xadd(
            cfg.keys.dlq(topic),
            {
                "originalTopic": topic,
                "payload": payload(i),
                "timestamp": now,
                "failedAt": now,
                "retryCount": "3",
                "maxRetries": "3",
                "partitionId": str(part),
                "headers": json.dumps(hdrs),
                "originalMessageId": f"{1000 + i}-0",
            },
        )
        if len(pipe) >= 1000:
            ids.extend(x.decode() for x in pipe.execute())
    ids.extend(x.decode() for x in pipe.execute())
    return ids


def role_user(name: str, role: str | None) -> User:
    roles_sync()
    user = User.objects.create_user(name, password=PASSWORD)
    if role:
        user.groups.add(Group.objects.get(name=role))
    return user


def scoped_viewer(name: str, pattern: str) -> Client:
    """A client logged in as ``name``, a Viewer only on the default cluster's topics
    matching ``pattern`` (a group of its own with the Viewer's permissions)."""
    scoped = Group.objects.create(name=f"{name}-viewers")
    scoped.permissions.set(Group.objects.get(name="Viewer").permissions.all())
    GroupTopicScope.objects.create(group=scoped, cluster="default", pattern=pattern)
    user = role_user(name, None)
    user.groups.add(scoped)
    c = Client()
    c.force_login(user)
    return c


def partition_len(r: redis.Redis, cfg: MQConfig, topic: str, partitions: int = 2) -> int:
    return sum(int(r.xlen(cfg.keys.partition(topic, p))) for p in range(partitions))
