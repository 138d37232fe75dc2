"""Drill 9: Redis restarted without persistence: the ``redis_restart`` alert.

The MQ runs on a redis-server of its own here (the console's store must survive). After a
few passes it is restarted on the same port with no data: the run id changed and every known
group is gone. The first pass after the restart opens the alert (critical); the collectors
API lists the missing groups. Nothing is recreated at ``$``: the collector writes nothing,
and the consumer that kept running recreates its group on the streams it reads at ``0``
(it reprocesses whatever comes, it skips nothing); the topic itself (registry, meta) stays
gone until someone creates it again. The alert holds for ALERT_RESTART_HOLD_S (compressed
to 3 s; an hour by default), then resolves.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from django.test import Client

from dashboard.clusters import reset_caches
from mqcore.config import MQConfig
from mqcore.topics import Topics
from scripts.embedded import EmbeddedRedis
from tests.drills.harness import Drill
from tests.integration.dlq_support import role_user

pytestmark = [pytest.mark.redis, pytest.mark.drills, pytest.mark.django_db]

ALERT = "redis_restart:redis"


@pytest.fixture
def mq_server(drill: Drill, settings: Any, tmp_path: Path) -> Iterator[EmbeddedRedis]:
    """A redis-server for the MQ alone, the drill and the console pointed at it."""
    server = EmbeddedRedis(tmp_path / "mq").start()
    settings.MQ_CLUSTERS = {"default": {"url": server.url}}
    reset_caches()
    drill.config, drill.redis_url = MQConfig.from_url(server.url), server.url
    try:
        yield server
    finally:
        drill.close()
        server.stop()
        reset_caches()


def test_redis_restart_without_persistence(
    drill: Drill, mq_server: EmbeddedRedis, settings: Any
) -> None:
    settings.ALERT_RESTART_HOLD_S = 3
    Topics(drill.config).create("orders", 2)
    Topics(drill.config).create("audit-log", 1)
    drill.consumer("orders")  # it keeps running across the restart
    drill.warm_up(3)

    mq_server.stop()  # no persistence: everything is gone
    mq_server.start()
    drill.inject()
    passes = drill.until("redis_restart", lambda: ALERT in drill.opened(), max_passes=3)
    assert passes == 1
    drill.detected("9 Redis restarted", "redis_restart alert", passes)
    alert = drill.receiver.alert(ALERT)
    assert alert["severity"] == "critical"
    assert "2 groups missing" in alert["message"]
    assert drill.metric("opsdash_alerts_open", rule="redis_restart", severity="critical") == 1
    client = Client()
    client.force_login(role_user("vic", "Viewer"))
    api = client.get("/api/v1/collectors").json()
    row = api["collectors"][0]
    assert row["restart"]["missing_groups"] == [
        "audit-log/default-group",
        "orders/default-group",
    ]
    assert any(e["kind"] == "redis" for e in drill.timeline())

    keys = drill.config.keys
    mq = redis.Redis.from_url(mq_server.url)
    try:
        assert not mq.exists(keys.registry(), keys.meta("orders"), keys.meta("audit-log"))
        assert not mq.exists(keys.partition("audit-log", 0))  # nobody reads it: untouched
        for p in (0, 1):
            stream = keys.partition("orders", p)
            groups = mq.xinfo_groups(stream) if mq.exists(stream) else []
            # the consumer's own group only, from the start (on these empty streams "$" would
            # read the same: mqcore's consumer creates a missing group at "0" by design)
            assert [(g["name"], g["last-delivered-id"]) for g in groups] in (
                [],
                [(b"default-group", b"0-0")],
            )
    finally:
        mq.close()
    drill.until("resolved", lambda: ALERT in drill.resolved(), max_passes=6)
    drill.assert_only_alerts(ALERT)
