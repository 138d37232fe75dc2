"""R20, continued: a master change is visible. Two real redis-servers, a master and its
replica; the replica is promoted (``REPLICAOF NO ONE``, what a Sentinel failover does) after
it had every delivery but before the master took its last acknowledgements and deliveries,
so the new master brings back acked entries as pending and one group's position goes back.

The collector reads the old master, then the new one (the cluster's URL moved, as a
Sentinel URL's client does). The console then shows the master change on the incident
timeline, as an alert, and on the collectors page and its API with the redelivered entries
counted and listed; the group that went back is REWIND with the cause "failover".
"""

from __future__ import annotations

import pytest
import redis
from django.test import Client

from dashboard.clusters import console_keys, console_redis
from dashboard.collectors.passes import collect_cluster
from dashboard.store import ConsoleStore
from mqcore.config import MQConfig
from mqcore.producer import Producer
from mqcore.topics import Topics
from scripts.embedded import EmbeddedRedis
from tests.integration.acl_support import mq_cluster
from tests.integration.dlq_support import role_user

pytestmark = [pytest.mark.redis, pytest.mark.faults, pytest.mark.django_db]

TOPIC = "orders"


def test_a_failover_is_on_the_timeline_the_alerts_and_the_collectors_page(
    master_replica: tuple[EmbeddedRedis, EmbeddedRedis], console_r: redis.Redis
) -> None:
    master, replica = master_replica
    old, new = (redis.Redis(host=s.host, port=s.port) for s in master_replica)
    config = MQConfig.from_url(master.url)
    Topics(config).create(TOPIC, 1, groups=["billing", "audit"])
    stream = config.keys.partition(TOPIC, 0)
    with Producer(config) as producer:
        for n in range(20):
            producer.send(TOPIC, f"m{n}", partition=0)
    billing = old.xreadgroup("billing", "c1", {stream: ">"}, count=15)[0][1]
    old.xreadgroup("audit", "c1", {stream: ">"}, count=5)
    assert old.wait(1, 2000) == 1  # the replica has every delivery so far
    new.replicaof("NO", "ONE")  # promoted: the acks below never reach it
    old.xack(stream, "billing", *[entry_id for entry_id, _ in billing])
    audit = old.xreadgroup("audit", "c1", {stream: ">"}, count=5)[0][1]
    old.xack(stream, "audit", *[entry_id for entry_id, _ in audit])

    store = ConsoleStore(console_redis(), console_keys())
    with mq_cluster(url=master.url):
        first = collect_cluster("default", claim=False, store=store)
    assert first.error is None
    assert first.snapshot.replication.role == "master"
    with mq_cluster(url=replica.url):  # the cluster's client now reaches the new master
        second = collect_cluster("default", claim=False, store=store)
        assert second.error is None
        change = second.snapshot.master_change
        assert change.reason == "promoted"
        assert change.redelivered == 15
        assert change.redelivered_exact is True
        assert change.rewound == [f"{TOPIC}/audit"]
        (listed,) = change.redelivered_entries
        assert listed.group == "billing"
        assert listed.ids == [entry_id.decode() for entry_id, _ in billing]
        groups = {g.group: g for g in second.snapshot.topics[0].groups}
        assert groups["audit"].status == "REWIND"
        assert groups["audit"].rewind_cause == "failover"
        assert "(cause: failover)" in groups["audit"].status_reason

        client = Client()
        client.force_login(role_user("vic", "Viewer"))
        # the timeline: one master change, no "restarted" (the run id changed for a failover)
        timeline = client.get("/api/v1/clusters/default/timeline?kind=redis").json()
        texts = [e["text"] for e in timeline["events"]]
        assert any("master changed (promoted)" in t for t in texts), texts
        assert not any("restarted" in t for t in texts), texts
        event = next(e for e in timeline["events"] if "master changed" in e["text"])
        assert event["data"]["redelivered"] == 15
        assert "15 acked entries pending again" in event["text"]
        page = client.get("/clusters/default/timeline/").content.decode()
        assert "master changed (promoted)" in page
        # the alert
        alerts = {a["rule"]: a for a in store.alerts_list(["default"])}
        assert "15 acked entries are pending again" in alerts["master_change"]["message"]
        api_alerts = client.get("/api/v1/alerts").json()
        assert "master_change" in str(api_alerts)
        metrics = client.get("/metrics").content.decode()
        assert 'opsdash_alerts_open{cluster="default",rule="master_change"' in metrics
        # the collectors page and its API
        rows = client.get("/api/v1/collectors").json()["collectors"]
        shown = rows[0]["master_change"]
        assert (shown["redelivered"], shown["rewound"]) == (15, [f"{TOPIC}/audit"])
        assert rows[0]["replication"]["role"] == "master"
        page = client.get("/collectors/").content.decode()
        assert "Redelivered after failover" in page
        assert "15 acked entries pending again" in page
        assert f"{TOPIC}/audit" in page
        # the group's REWIND and its cause, in the topic's API and on its page
        topic = client.get(f"/api/v1/clusters/default/topics/{TOPIC}").json()
        assert "cause: failover" in str(topic)
        page = client.get(f"/clusters/default/topics/{TOPIC}/").content.decode()
        assert "cause: failover" in page
        # a later pass keeps the change (and the alert) but reports it once
        third = collect_cluster("default", claim=False, store=store)
        assert third.snapshot.master_change.at_ms == change.at_ms
        timeline = client.get("/api/v1/clusters/default/timeline?kind=redis").json()
        assert sum("master changed" in e["text"] for e in timeline["events"]) == 1
    old.close()
    new.close()
