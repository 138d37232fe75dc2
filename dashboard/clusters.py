"""The MQ deployments ("clusters") the console watches, from settings.MQ_CLUSTERS.

Selectors, services and collectors get their mqcore config and client here; a
client is cached per cluster per process. Credentials stay inside MQConfig:
pages and logs only ever see :func:`cluster_names` and ``redacted_url``.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import redis
from django.conf import settings
from django.http import Http404

from mqcore.config import MQConfig, RedisClient
from mqcore.keys import ConsoleKeys

__all__ = [
    "UnknownClusterError",
    "cluster_client",
    "cluster_config",
    "cluster_names",
    "console_keys",
    "console_redis",
]


class UnknownClusterError(Http404):
    """Raised when a URL or argument names a cluster that is not configured."""


def cluster_names() -> list[str]:
    return list(settings.MQ_CLUSTERS)


@cache
def cluster_config(name: str) -> MQConfig:
    options: dict[str, Any] | None = settings.MQ_CLUSTERS.get(name)
    if options is None:
        raise UnknownClusterError(f"unknown cluster {name!r}")
    opts = dict(options)
    url = opts.pop("url")
    allowed = {f for f in MQConfig.__dataclass_fields__ if f != "url"}
    return MQConfig.from_url(url, **{k: v for k, v in opts.items() if k in allowed})


@cache
def cluster_client(name: str) -> RedisClient:
    return cluster_config(name).client()


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
    for fn in (cluster_config, cluster_client, console_redis):
        fn.cache_clear()
