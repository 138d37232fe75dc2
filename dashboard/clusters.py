"""The MQ deployments ("clusters") the console watches, from settings.MQ_CLUSTERS.

Selectors, services and collectors get their mqcore objects here: one cached
config, client, :class:`~mqcore.admin.Admin`, :class:`~mqcore.dlq.DeadLetters`,
:class:`~mqcore.retries.RetrySet` and :class:`~mqcore.checkpoints.CheckpointStore`
per cluster per process.
Credentials stay inside MQConfig: pages and logs only ever see
:func:`cluster_names` and ``redacted_url``.

Reads (selectors, collectors) use a cluster's ``url``. Actions (the services that write to
the MQ Redis) use :func:`writer_admin`, :func:`writer_dead_letters` and
:func:`writer_retry_set`: the cluster's ``write_url`` when it has one (a second Redis user
allowed to write, docs/deploy.md), else ``url``. A cluster declared ``"read_only": true``
has no writer: they raise :class:`ReadOnlyClusterError`, and
:func:`dashboard.permissions.actions_for` drops the actions that write there, so pages
offer none.

Replica reads (opt-in per cluster): with ``"read_from_replica": true`` (a Sentinel URL: a
replica the Sentinels name) or ``"replica_url"`` (any other), the collector's snapshot is
read from a replica (:func:`snapshot_admin`); everything else (the probes, drill-downs,
actions) stays on ``url``. A collector pass takes all it reads with in one call
(:func:`pass_readers`).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import cache
from typing import Any

import redis
from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.http import Http404

from dashboard.store.console import ConsoleStore
from dashboard.store.keys import ConsoleKeys
from mqcore.admin import Admin
from mqcore.checkpoints import CheckpointStore
from mqcore.config import MQConfig, RedisClient
from mqcore.dlq import DeadLetters
from mqcore.outside_events import OutsideEvents
from mqcore.retention import JavaRetention, RetentionPolicy
from mqcore.retries import RetrySet
from mqcore.sentinel import client_from_url

__all__ = [
    "PassReaders",
    "ReadOnlyClusterError",
    "UnknownClusterError",
    "admin",
    "checkpoints",
    "cluster_client",
    "cluster_config",
    "cluster_names",
    "console_keys",
    "console_redis",
    "console_store",
    "dead_letters",
    "java_retention",
    "outside_events",
    "pass_readers",
    "read_only",
    "retention_policy",
    "retry_set",
    "snapshot_admin",
    "writer_admin",
    "writer_config",
    "writer_dead_letters",
    "writer_retry_set",
]


class UnknownClusterError(Http404):
    """Raised when a URL or argument names a cluster that is not configured."""


class ReadOnlyClusterError(PermissionDenied):
    """Raised when an action would write to a cluster the console may only read."""

    def __init__(self, cluster: str) -> None:
        super().__init__(f"this console is read-only for cluster {cluster}")
        self.cluster = cluster


def cluster_names() -> list[str]:
    return list(settings.MQ_CLUSTERS)


def _config(name: str, url_option: str) -> MQConfig:
    opts = dict(_options(name))
    url = opts[url_option]
    opts.setdefault("max_decode_bytes", int(settings.MQ_MAX_DECODE_BYTES))
    opts.setdefault("decode_budget_bytes", int(settings.MQ_DECODE_BUDGET_BYTES))
    allowed = {f for f in MQConfig.__dataclass_fields__ if f != "url"}
    return MQConfig.from_url(url, **{k: v for k, v in opts.items() if k in allowed})


@cache
def cluster_config(name: str) -> MQConfig:
    """How the console reads cluster ``name`` (its ``url``)."""
    return _config(name, "url")


def read_only(name: str) -> bool:
    """Whether the console may only read cluster ``name`` (``"read_only": true``)."""
    return bool(_options(name).get("read_only"))


@cache
def writer_config(name: str) -> MQConfig:
    """How the console's actions write to cluster ``name``: its ``write_url``, else its
    ``url``; ReadOnlyClusterError when the cluster is read-only."""
    if read_only(name):
        raise ReadOnlyClusterError(name)
    if _options(name).get("write_url"):
        return _config(name, "write_url")
    return cluster_config(name)


@cache
def _writer_client(name: str) -> RedisClient:
    if writer_config(name) is cluster_config(name):
        return cluster_client(name)
    return writer_config(name).client()


@cache
def cluster_client(name: str) -> RedisClient:
    return cluster_config(name).client()


@cache
def admin(name: str) -> Admin:
    """Read views and operator actions of cluster ``name``."""
    return Admin(cluster_config(name), client=cluster_client(name))


@cache
def snapshot_admin(name: str) -> Admin | None:
    """The Admin that reads the collector's snapshot of cluster ``name`` from a replica, or
    None when the cluster reads its primary (no ``read_from_replica`` nor ``replica_url``)."""
    opts = _options(name)
    if opts.get("replica_url"):
        config = _config(name, "replica_url")
        return Admin(config, client=config.client())
    if opts.get("read_from_replica"):
        config = cluster_config(name)
        return Admin(config, client=config.replica_client())
    return None


@dataclass(frozen=True, slots=True)
class PassReaders:
    """What a collector pass reads a cluster with: the primary's :class:`Admin` (the probes,
    the counts, the reads after a master change), the replica's for the snapshot (None: the
    snapshot is read from the primary too) and the retention rules the risks are judged by."""

    admin: Admin
    policy: RetentionPolicy
    java: JavaRetention | None
    replica: Admin | None


@cache
def pass_readers(name: str) -> PassReaders:
    """Everything a collector pass of cluster ``name`` reads with, built once a process."""
    return PassReaders(
        admin(name), retention_policy(name), java_retention(name), snapshot_admin(name)
    )


@cache
def dead_letters(name: str) -> DeadLetters:
    """The dead-letter queues of cluster ``name``."""
    return DeadLetters(cluster_config(name), client=cluster_client(name))


@cache
def outside_events(name: str) -> OutsideEvents:
    """Cluster ``name``'s record of the actions taken outside the console (mqcore's CLI and
    library)."""
    return OutsideEvents(cluster_config(name), client=cluster_client(name))


@cache
def retry_set(name: str) -> RetrySet:
    """The retry sets of cluster ``name`` (browse, retry now, delete)."""
    return RetrySet(cluster_config(name), client=cluster_client(name))


@cache
def writer_admin(name: str) -> Admin:
    """Operator actions on cluster ``name``, through its writer."""
    return Admin(writer_config(name), client=_writer_client(name))


@cache
def writer_dead_letters(name: str) -> DeadLetters:
    """Replays, deletes and purges of cluster ``name``'s letters, through its writer."""
    return DeadLetters(writer_config(name), client=_writer_client(name))


@cache
def writer_retry_set(name: str) -> RetrySet:
    """Retry now and delete on cluster ``name``'s retry sets, through its writer."""
    return RetrySet(writer_config(name), client=_writer_client(name))


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
    """The console's own store (snapshots, time series, lease timeline); a Sentinel URL
    (:mod:`mqcore.sentinel`) gives a client that follows the master."""
    return client_from_url(settings.CONSOLE_REDIS_URL, socket_timeout=5, socket_connect_timeout=2)


def console_keys() -> ConsoleKeys:
    return ConsoleKeys(settings.CONSOLE_KEY_PREFIX)


def console_store() -> ConsoleStore:
    """The console store at ``CONSOLE_REDIS_URL`` under ``CONSOLE_KEY_PREFIX``: what pages
    read and the collector writes."""
    return ConsoleStore(console_redis(), console_keys())


def reset_caches() -> None:
    """Forget every functools cache of the console: the configs, clients and writers here,
    and any other ``@cache``/``@lru_cache`` function of a ``dashboard`` module (tests
    change settings between cases). Found by looking, so a new cache cannot be missed."""
    for module in list(sys.modules.values()):
        name = getattr(module, "__name__", "")
        if name != "dashboard" and not name.startswith("dashboard."):
            continue
        for value in list(vars(module).values()):
            clear = getattr(value, "cache_clear", None)
            if callable(clear) and getattr(value, "__module__", None) == name:
                clear()
