"""Replica reads, opt-in per cluster: the collector's snapshot comes from a replica
(``replica_url``, or ``read_from_replica`` with a Sentinel URL), with the replica's
replication lag on the overview and the collectors page; the probes, drill-downs and
actions stay on the primary. Real master and replica (and Sentinels) on free ports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import redis
from django.core.exceptions import ImproperlyConfigured
from django.test import Client

from config.settings import base
from dashboard.clusters import console_keys, console_redis
from dashboard.collectors.passes import collect_cluster
from dashboard.store import ConsoleStore
from mqcore.config import MQConfig
from mqcore.producer import Producer
from mqcore.topics import Topics
from scripts.embedded import EmbeddedRedis
from tests.harness.sentinel import LocalSentinel
from tests.integration.acl_support import mq_cluster
from tests.integration.dlq_support import role_user

pytestmark = [pytest.mark.redis, pytest.mark.faults, pytest.mark.django_db]


def _snapshot_reads(server: redis.Redis) -> int:
    """Stream reads (XINFO, XLEN, XPENDING) the server answered since its stats were reset."""
    stats = server.info("commandstats")
    return sum(
        int(v["calls"])
        for k, v in stats.items()
        if k.startswith(("cmdstat_xinfo", "cmdstat_xlen", "cmdstat_xpending"))
    )


def _seed(url: str) -> None:
    config = MQConfig.from_url(url)
    Topics(config).create("orders", 2, groups=["billing"])
    with Producer(config) as producer:
        for n in range(10):
            producer.send("orders", f"m{n}", key=f"k{n}")


def test_the_snapshot_reads_the_replica_and_shows_its_lag(
    master_replica: tuple[EmbeddedRedis, EmbeddedRedis], console_r: redis.Redis
) -> None:
    master, replica = master_replica
    primary, second = (redis.Redis(host=s.host, port=s.port) for s in master_replica)
    _seed(master.url)
    assert primary.wait(1, 2000) == 1
    store = ConsoleStore(console_redis(), console_keys())
    with mq_cluster(url=master.url, replica_url=replica.url):
        primary.config_resetstat()
        second.config_resetstat()
        result = collect_cluster("default", claim=False, store=store)
        assert result.error is None
        snap = result.snapshot
        assert [t.length for t in snap.topics] == [10]
        assert _snapshot_reads(second) > 0
        assert _snapshot_reads(primary) == 0  # the snapshot's reads went to the replica
        assert snap.replica.port == replica.port
        assert snap.replica.link == "up"
        assert snap.replica.lag_bytes is not None
        assert snap.replica.lag_bytes >= 0
        assert snap.replication.role == "master"  # the primary's facts
        assert snap.replication.port == master.port
        client = Client()
        client.force_login(role_user("vic", "Viewer"))
        overview = client.get("/api/v1/clusters/default/overview").json()
        assert overview["replica"]["port"] == replica.port
        page = client.get("/clusters/default/").content.decode()
        assert "read from a replica" in page
        assert "bytes of replication behind the master" in page
        assert "snapshot read from a replica" in client.get("/collectors/").content.decode()
        # drill-downs read the primary
        primary.config_resetstat()
        second.config_resetstat()
        assert client.get("/clusters/default/topics/orders/messages/").status_code == 200
        assert _snapshot_reads(second) == 0
    primary.close()
    second.close()


def test_read_from_replica_through_sentinel(tmp_path: Path, console_r: redis.Redis) -> None:
    deployment = LocalSentinel(tmp_path / "redis")
    sentinel = deployment.start()
    try:
        url = sentinel.url(0)
        _seed(url)
        with mq_cluster(url=url, read_from_replica=True):
            result = collect_cluster(
                "default", claim=False, store=ConsoleStore(console_redis(), console_keys())
            )
            assert result.error is None
            assert result.snapshot.replica.port == sentinel.replica.port
            assert result.snapshot.replication.port == sentinel.master_port()
    finally:
        deployment.stop()


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"read_from_replica": "yes"}, "must be true or false"),
        ({"replica_url": 5}, "must be a URL string"),
        ({"read_from_replica": True}, "finds a replica through Sentinel"),
        ({"read_from_replica": True, "replica_url": "redis://r:6379/0"}, "not both"),
    ],
)
def test_bad_replica_options_stop_the_start(
    monkeypatch: pytest.MonkeyPatch, options: dict[str, object], error: str
) -> None:
    monkeypatch.setenv("MQ_CLUSTERS", json.dumps({"a": {"url": "redis://h:6379/0", **options}}))
    with pytest.raises(ImproperlyConfigured, match=error):
        base.mq_clusters_from_env()
