"""Pipeline groups: recognised from checkpoint records, shown with their checkpoint health,
never as unowned partitions, and no lease alarm for them (real Redis, real collector passes)."""

from __future__ import annotations

import msgspec
import pytest
import redis
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from dashboard.clusters import console_store
from dashboard.collectors.passes import collect_cluster
from mqcore.checkpoints import CheckpointStore, Writer
from mqcore.config import MQConfig
from mqcore.models import PipelineMark
from mqcore.producer import OutgoingMessage, Producer
from mqcore.topics import Topics
from tests.integration.pages_support import make_user

pytestmark = [pytest.mark.redis, pytest.mark.django_db]

PIPE = "order_totals.redis"
GROUP = "totals-sink"  # not named after the pipeline: recognition is by checkpoint records


@pytest.fixture
def pipeline(mq_config: MQConfig) -> CheckpointStore:
    """8 partitions; a plain group without consumers; a pipeline group half way (lag 8)."""
    Topics(mq_config).create("orders", 8, groups=("plain",))
    sent = Producer(mq_config).send_many(
        "orders", [OutgoingMessage(f'{{"n":{i}}}', partition=i % 8) for i in range(16)]
    )
    half: dict[str, str] = {}
    for msg in sent[:8]:
        half[str(msg.partition)] = msg.id
    ckpt = CheckpointStore(mq_config)
    kw = {"topic": "orders", "sink": "redis", "group": GROUP}
    ckpt.record_planned(PIPE, 0, Writer(run_id="a", **kw))
    ckpt.record_committed(PIPE, 0, Writer(run_id="a", **kw), records=8, acked_ids=half)
    return ckpt


@pytest.fixture
def client() -> Client:
    c = Client()
    c.force_login(make_user())
    return c


def test_pipeline_group_shows_checkpoint_health_not_unowned(
    pipeline: CheckpointStore, client: Client, console_r: redis.Redis, settings
) -> None:
    settings.ALERT_STATUS_FOR_S = 0
    for _ in range(3):
        assert collect_cluster("default", claim=False).stored
    snap = console_store().snapshot_get("default")
    assert snap is not None
    groups = {g.group: g for g in snap.topics[0].groups}
    mark = groups[GROUP].pipeline
    assert isinstance(mark, PipelineMark)
    assert mark.name == PIPE
    assert mark.health == "ok"
    assert mark.failed_checkpoints == 0
    assert mark.checkpoint_age_ms is not None
    assert groups["plain"].pipeline is msgspec.UNSET  # not in its stored JSON

    topic_html = client.get("/clusters/default/topics/orders/").content.decode()
    section = topic_html.split(f'data-group="{GROUP}"', 1)[1].split("</section>", 1)[0]
    assert "unowned" not in section
    assert f'pipeline <a href="/clusters/default/pipelines/{PIPE}/">{PIPE}</a>' in section
    assert ", last checkpoint " in section
    plain = topic_html.split('data-group="plain"', 1)[1].split("</section>", 1)[0]
    assert plain.count(">unowned<") == 8  # a group of consumers that are gone stays red

    page = client.get(f"/clusters/default/topics/orders/leases/?group={GROUP}")
    assert page.context["d"]["unowned"] == 0
    assert page.context["d"]["pipeline_partitions"] == 8
    assert "unowned" not in page.content.decode()
    api = client.get(f"/api/v1/clusters/default/topics/orders/leases?group={GROUP}").json()
    assert api["unowned"] == 0
    assert {lease["pipeline"]["name"] for lease in api["leases"]} == {PIPE}
    assert all("owner" in lease and "epoch" in lease for lease in api["leases"])  # kept fields
    detail = client.get("/api/v1/clusters/default/topics/orders").json()
    by_name = {g["group"]: g for g in detail["groups"]}
    assert by_name[GROUP]["pipeline"]["name"] == PIPE
    assert by_name["plain"]["pipeline"] is None

    # no alarm of any kind for the pipeline group
    open_ids = [a["id"] for a in console_store().alerts_list(["default"])]
    assert not [i for i in open_ids if GROUP in i], open_ids
    assert "status:orders/plain" in open_ids  # the same trouble without a pipeline alarms

    body = client.get("/metrics").content.decode()
    samples = {
        (s.name, frozenset(s.labels.items())): s.value
        for fam in text_string_to_metric_families(body)
        for s in fam.samples
    }
    key = frozenset(
        {
            ("cluster", "default"),
            ("topic", "orders"),
            ("group", GROUP),
            ("pipeline", PIPE),
            ("health", "ok"),
        }
    )
    assert samples[("redis_streaming_mq_console_group_pipeline", key)] == 1.0


def test_failed_and_old_checkpoints_alert(
    pipeline: CheckpointStore, client: Client, console_r: redis.Redis, settings
) -> None:
    settings.ALERT_CHECKPOINT_AGE_S = 60
    kw = {"topic": "orders", "sink": "redis", "group": GROUP}
    old = 1_000_000  # epoch ms long ago
    pipeline.record_planned(PIPE, 1, Writer(run_id="a", **kw), now_ms=old)
    pipeline.record_committed(
        PIPE, 1, Writer(run_id="a", **kw), records=0, acked_ids={}, now_ms=old
    )
    pipeline.record_planned(PIPE, 2, Writer(run_id="a", **kw))
    pipeline.record_failed(PIPE, 2, run_id="a", reason="sink <b>down</b>")
    assert collect_cluster("default", claim=False).stored
    alerts = {a["id"]: a for a in console_store().alerts_list(["default"])}
    assert f"checkpoint_age:{PIPE}" in alerts
    failed = alerts[f"checkpoint_failed:{PIPE}"]
    assert "batch 2 failed" in failed["message"]
    snap = console_store().snapshot_get("default")
    assert snap is not None
    mark = {g.group: g.pipeline for g in snap.topics[0].groups}
    assert isinstance(mark[GROUP], PipelineMark)
    assert mark[GROUP].health == "failing"
    html = client.get("/clusters/default/topics/orders/").content.decode()
    assert 'data-pipeline-health="failing"' in html
    assert "<b>down</b>" not in html
    # the failed batch is replayed and commits: the failed-checkpoint alert resolves
    pipeline.record_planned(PIPE, 2, Writer(run_id="b", **kw))
    pipeline.record_committed(PIPE, 2, Writer(run_id="b", **kw), records=0, acked_ids={})
    assert collect_cluster("default", claim=False).stored
    ids = {a["id"] for a in console_store().alerts_list(["default"])}
    assert f"checkpoint_failed:{PIPE}" not in ids
    assert f"checkpoint_age:{PIPE}" not in ids
