"""Test harness: a private redis-server per session (never one on a default port).

- ``redis_server``: session-wide EmbeddedRedis on a free port (pid checked).
- ``redis_url`` / ``r`` / ``mq_config``: the MQ database, flushed before every test.
- ``console_r``: the console's store (DB 1 of the same server), flushed too.
- ``redis_cluster`` / ``cluster_config``: a 3-node Redis Cluster, flushed per test.
- ``postgres_url``: a PostgreSQL server URL allowed to CREATE DATABASE: ``TEST_POSTGRES_URL``,
  else a private throwaway server (tests/harness/postgres.py), started only when requested.
Django settings are pointed at the private server for the whole session.

``make test`` runs the suite on two pytest-xdist workers (``-n 2 --dist loadfile``): each
worker has its own redis-server, cluster, PostgreSQL, Chromium, temp dirs and in-memory test
database; a module's tests run on one worker, in order; the Spark modules are dealt first
(see ``pytest_collection_modifyitems``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from mqcore.config import MQConfig
from scripts.embedded import EmbeddedRedis
from tests.harness.cluster import LocalCluster

ARTIFACTS = Path(os.environ.get("TEST_ARTIFACTS", Path(__file__).parent.parent / "test-artifacts"))


# Modules dealt out first under ``make test``'s workers, longest first: the crash test alone
# takes a third of the suite's time, so it starts at once while the other worker runs the rest.
# The two long incident drills follow (a Spark driver's starts; a wait for the once-a-minute
# Redis probe, twice), so that neither is left for the end of the run.
FIRST = (
    "tests/spark/test_exactly_once_crashes.py",
    "tests/spark/test_local_cluster.py",
    "tests/spark/test_source.py",
    "tests/spark/test_sql_sink_scale.py",
    "tests/drills/test_d10_eviction.py",
    "tests/drills/test_d11_pipeline_killed.py",
)


@pytest.hookimpl(trylast=True)  # after pytest-django's reordering
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The Spark modules at the head of the run, the rest in their order. ``--dist loadfile``
    deals whole modules to the workers in this order (``--no-loadscope-reorder``): each
    module's tests run in series on one worker, with its module fixtures set up once."""
    first = {path: rank for rank, path in enumerate(FIRST)}
    items.sort(key=lambda item: first.get(item.nodeid.split("::", 1)[0], len(FIRST)))


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedRedis]:
    server = EmbeddedRedis(tmp_path_factory.mktemp("redis"))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session", autouse=True)
def _point_django_at_private_redis(redis_server: EmbeddedRedis) -> Iterator[None]:
    """Every Django setting that names a Redis uses the private server."""
    try:
        from django.conf import settings
    except ImportError:  # pragma: no cover
        yield
        return
    base = f"redis://{redis_server.host}:{redis_server.port}"
    settings.MQ_CLUSTERS = {"default": {"url": f"{base}/0"}}
    settings.CONSOLE_REDIS_URL = f"{base}/1"
    settings.CELERY_BROKER_URL = f"{base}/2"
    from config.celery import app as celery_app

    celery_app.conf.broker_url = f"{base}/2"
    from dashboard.clusters import reset_caches

    reset_caches()
    from django.test import override_settings

    caches = {**settings.CACHES, "ratelimit": {**settings.CACHES["ratelimit"]}}
    caches["ratelimit"]["LOCATION"] = settings.CONSOLE_REDIS_URL  # the rate limits' counters
    with override_settings(CACHES=caches):
        yield


@pytest.fixture
def redis_url(redis_server: EmbeddedRedis) -> str:
    client = redis.Redis(host=redis_server.host, port=redis_server.port)
    client.flushall()
    client.close()
    return redis_server.url


@pytest.fixture
def r(redis_url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_url, socket_timeout=5)
    yield client
    client.close()


@pytest.fixture
def console_r(redis_server: EmbeddedRedis, redis_url: str) -> Iterator[redis.Redis]:
    client = redis.Redis(host=redis_server.host, port=redis_server.port, db=1, socket_timeout=5)
    yield client
    client.close()


@pytest.fixture
def mq_config(redis_url: str) -> MQConfig:
    return MQConfig.from_url(redis_url)


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    cluster = LocalCluster(tmp_path_factory.mktemp("cluster"))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def cluster_config(redis_cluster: LocalCluster) -> MQConfig:
    redis_cluster.flush()
    return MQConfig.from_url(redis_cluster.url, cluster=True)


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A PostgreSQL URL (superuser-ish, may CREATE DATABASE); skips when none can be had."""
    if url := os.environ.get("TEST_POSTGRES_URL"):
        yield url
        return
    from tests.harness.postgres import PostgresUnavailable, PrivatePostgres

    try:
        server = PrivatePostgres()
    except PostgresUnavailable as exc:
        pytest.skip(f"no PostgreSQL for the tests: {exc}")
    server.start()
    try:
        yield server.url
    finally:
        server.stop()
