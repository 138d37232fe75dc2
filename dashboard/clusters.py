"""The MQ deployments ("clusters") the console watches, from settings.MQ_CLUSTERS.

Selectors, services and collectors get their mqcore objects here: one cached
config, client, :class:`~mqcore.admin.Admin`, :class:`~mqcore.dlq.DeadLetters`,
:class:`~mqcore.retries.RetrySet` and :class:`~mqcore.checkpoints.CheckpointStore`
per cluster per process.
Credentials stay inside MQConfig: pages and logs only ever see
:func:`cluster_names` and ``redacted_url``.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import redis
from django.conf import settings
from django.http import Http404

from mqcore.admin import Admin
from mqcore.checkpoints import CheckpointStore
from mqcore.config import MQConfig, RedisClient
from mqcore.dlq import DeadLetters
from mqcore.keys import ConsoleKeys
from mqcore.retention import JavaRetention, RetentionPolicy
from mqcore.retries import RetrySet

__all__ = [
    "UnknownClusterError",
    "admin",
    "checkpoints",
    "cluster_client",
    "cluster_config",
    "cluster_names",
    "console_keys",
    "console_redis",
    "dead_letters",
    "java_retention",
    "retention_policy",
    "retry_set",
]


class UnknownClusterError(Http404):
    """Raised when a URL or argument names a cluster that is not configured."""


def cluster_names() -> list[str]:
    return list(settings.MQ_CLUSTERS)


@cache
def cluster_config(name: str) -> MQConfig:
    opts = dict(_options(name))
    url = opts.pop("url")
    opts.setdefault("max_decode_bytes", int(settings.MQ_MAX_DECODE_BYTES))
    opts.setdefault("decode_budget_bytes", int(settings.MQ_DECODE_BUDGET_BYTES))
    allowed = {f for f in MQConfig.__dataclass_fields__ if f != "url"}
    return MQConfig.from_url(url, **{k: v for k, v in opts.items() if k in allowed})


@cache
def cluster_client(name: str) -> RedisClient:
    return cluster_config(name).client()


@cache
def admin(name: str) -> Admin:
    """Read views and operator actions of cluster ``name``."""
    return Admin(cluster_config(name), client=cluster_client(name))


@cache
def dead_letters(name: str) -> DeadLetters:
    """The dead-letter queues of cluster ``name``."""
    return DeadLetters(cluster_config(name), client=cluster_client(name))


@cache
def retry_set(name: str) -> RetrySet:
    """The retry sets of cluster ``name`` (browse, retry now, delete)."""
    return RetrySet(cluster_config(name), client=cluster_client(name))


def _options(name: str) -> dict[str, Any]:
    options: dict[str, Any] | None = settings.MQ_CLUSTERS.get(name)
    if options is None:
        raise UnknownClusterError(f"unknown cluster {name!r}")
    return options


@cache
def retention_policy(name: str) -> RetentionPolicy:
    """mqcore's housekeeper rules of cluster ``name`` (``MQ_CLUSTERS[name]["retention"]``;
    none: the housekeeper deletes nothing there)."""
    return RetentionPolicy.from_mapping(_options(name).get("retention"))


@cache
def java_retention(name: str) -> JavaRetention | None:
    """The retention of a Java deployment sharing cluster ``name`` (``["java_retention"]``),
    None when no Java service trims its streams."""
    return JavaRetention.from_mapping(_options(name).get("java_retention"))


@cache
def checkpoints(name: str) -> CheckpointStore:
    """The pipeline checkpoint store of cluster ``name``."""
    return CheckpointStore(cluster_config(name), cluster_client(name))


@cache
def console_redis() -> redis.Redis:
    """The console's own store (snapshots, time series, lease timeline)."""
    return redis.Redis.from_url(
        settings.CONSOLE_REDIS_URL, socket_timeout=5, socket_connect_timeout=2
    )


def console_keys() -> ConsoleKeys:
    return ConsoleKeys(settings.CONSOLE_KEY_PREFIX)


def reset_caches() -> None:
    """Forget cached configs and clients (tests change settings between cases)."""
    for fn in (
        cluster_config, cluster_client, admin, dead_letters, checkpoints, console_redis,
        retention_policy, java_retention,
    ):  # fmt: skip
        fn.cache_clear()
