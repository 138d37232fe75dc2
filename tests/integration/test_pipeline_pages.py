"""Checkpoints pages and their JSON twins, from real checkpoint records in Redis."""

from __future__ import annotations

import time

import pytest
from django.contrib.auth.models import User
from django.test import Client, override_settings

from mqcore.checkpoints import CheckpointStore, Writer
from mqcore.config import MQConfig
from mqcore.producer import OutgoingMessage, Producer
from mqcore.topics import Topics
from tests.integration.pages_support import make_user

pytestmark = [pytest.mark.redis, pytest.mark.django_db]

PIPE = "order_totals.redis"


@pytest.fixture
def records(mq_config: MQConfig) -> CheckpointStore:
    Topics(mq_config).create("orders", 2, groups=())
    sent = Producer(mq_config).send_many(
        "orders", [OutgoingMessage('{"customer":"a","amount":1}', key=f"k{i}") for i in range(6)]
    )
    first = {str(r.partition): r.id for r in sent[:3]}
    store = CheckpointStore(mq_config)
    kw = {"topic": "orders", "sink": "redis", "group": PIPE}
    store.record_planned(PIPE, 0, Writer(run_id="a", **kw))
    store.record_committed(PIPE, 0, Writer(run_id="a", **kw), records=3, acked_ids=first)
    store.record_planned(PIPE, 1, Writer(run_id="a", **kw))
    store.record_failed(PIPE, 1, run_id="a", reason="<script>alert(1)</script> sink down")
    store.record_planned(PIPE, 1, Writer(run_id="b", **kw))  # a restart replays it: a restore
    return store


@pytest.fixture
def client() -> Client:
    c = Client()
    c.force_login(make_user())
    return c


def test_list_and_detail_show_counts_cards_history_and_gaps(
    records: CheckpointStore, client: Client
) -> None:
    page = client.get("/clusters/default/pipelines/")
    assert page.status_code == 200
    assert PIPE in page.content.decode()
    detail = client.get(f"/clusters/default/pipelines/{PIPE}/")
    html = detail.content.decode()
    assert detail.status_code == 200
    assert 'data-count="completed">1<' in html
    assert 'data-count="restored">1<' in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt; sink down" in html
    assert "<script>alert(1)" not in html
    assert 'data-batch="1" data-status="restored"' in html
    # Partition gap: 3 of 6 messages are not covered by the last checkpoint.
    data = client.get(f"/api/v1/clusters/default/pipelines/{PIPE}").json()
    assert sum(p["gap_messages"] for p in data["partitions"]) == 3
    assert data["summary"]["completed"] == 1
    assert [h["batch_id"] for h in data["history"]] == [1, 0]
    assert data["latest_failed"]["failure_reason"].endswith("sink down")


def test_stale_warning_and_paging(records: CheckpointStore, client: Client) -> None:
    with override_settings(ALERT_CHECKPOINT_AGE_S=0):
        time.sleep(0.01)
        html = client.get(f"/clusters/default/pipelines/{PIPE}/").content.decode()
    assert 'id="stale-warning"' in html
    fresh = client.get(f"/clusters/default/pipelines/{PIPE}/").content.decode()
    assert 'id="stale-warning"' not in fresh
    older = client.get(f"/api/v1/clusters/default/pipelines/{PIPE}?limit=1").json()
    assert [h["batch_id"] for h in older["history"]] == [1]
    assert older["next_before"] == 1
    rest = client.get(f"/api/v1/clusters/default/pipelines/{PIPE}?limit=1&before=1").json()
    assert [h["batch_id"] for h in rest["history"]] == [0]


def test_errors_unknown_pipeline_bad_params_and_auth(
    records: CheckpointStore, client: Client
) -> None:
    assert client.get("/clusters/default/pipelines/nope/").status_code == 404
    assert client.get("/api/v1/clusters/default/pipelines/nope").status_code == 404
    assert client.get(f"/api/v1/clusters/default/pipelines/{PIPE}?limit=x").status_code == 400
    assert client.get("/api/v1/clusters/nowhere/pipelines").status_code == 404
    assert Client().get("/api/v1/clusters/default/pipelines").status_code == 401
    assert Client().get("/clusters/default/pipelines/").status_code == 302
    norole = Client()
    norole.force_login(User.objects.create_user("norole", password="pw-norole-123"))
    assert norole.get("/clusters/default/pipelines/").status_code == 403
    assert norole.get(f"/api/v1/clusters/default/pipelines/{PIPE}").status_code == 403
    listing = client.get("/api/v1/clusters/default/pipelines").json()
    assert [p["pipeline"] for p in listing["pipelines"]] == [PIPE]


def test_a_commit_left_mid_way_is_shown_until_the_next_commit_finishes_it(
    records: CheckpointStore, client: Client, mq_config: MQConfig
) -> None:
    """A big batch commits in steps; a driver that died between them leaves the journal,
    which the page and the API show (batch, groups applied) until a commit finishes it."""
    kw = {"topic": "orders", "sink": "redis", "group": PIPE}
    outputs = [mq_config.keys.sink_output(PIPE, "totals")]
    increments = [(1, f"c{i}", 1) for i in range(10)]

    def die(group: int) -> None:
        raise RuntimeError("driver killed")

    records.record_planned(PIPE, 1, Writer(run_id="c", **kw))
    with pytest.raises(RuntimeError):
        records.record_committed(
            PIPE,
            1,
            Writer(run_id="c", **kw),
            records=10,
            acked_ids={},
            outputs=outputs,
            increments=increments,
            chunk=3,
            on_group=die,
        )
    html = client.get(f"/clusters/default/pipelines/{PIPE}/").content.decode()
    assert 'id="commit-under-way"' in html
    assert "Batch <strong>1</strong> is being committed in steps" in html
    assert "1 of 4 groups" in html
    data = client.get(f"/api/v1/clusters/default/pipelines/{PIPE}").json()
    assert data["commit_under_way"]["batch"] == 1
    assert data["commit_under_way"]["applied"] == 1
    assert records.record_committed(
        PIPE,
        1,
        Writer(run_id="d", **kw),
        records=10,
        acked_ids={},
        outputs=outputs,
        increments=increments,
        chunk=3,
    )
    assert (
        'id="commit-under-way"'
        not in client.get(f"/clusters/default/pipelines/{PIPE}/").content.decode()
    )
    assert (
        client.get(f"/api/v1/clusters/default/pipelines/{PIPE}").json()["commit_under_way"] is None
    )
