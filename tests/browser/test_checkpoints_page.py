"""The checkpoints page in Chromium: completed checkpoints, and a restore after a restart.

The records are written by the same store calls the sinks make: run "a" commits
batch 0 and plans batch 1, then "crashes"; run "b" replays batch 1 (a restore)
and commits it.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User

from dashboard.permissions import VIEWER, roles_sync
from mqcore.checkpoints import CheckpointStore, Writer
from mqcore.config import MQConfig
from mqcore.producer import OutgoingMessage, Producer
from mqcore.topics import Topics

pytestmark = [pytest.mark.browser, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

PIPE = "order_totals.redis"


def _pipeline_with_restore(config: MQConfig) -> None:
    Topics(config).create("orders", 1, groups=())
    sent = Producer(config).send_many(
        "orders", [OutgoingMessage('{"customer":"a","amount":2}') for _ in range(4)]
    )
    store = CheckpointStore(config)
    kw = {"topic": "orders", "sink": "redis", "group": PIPE}
    store.record_planned(PIPE, 0, Writer(run_id="run-a", **kw))
    store.record_committed(
        PIPE, 0, Writer(run_id="run-a", **kw), records=2, acked_ids={"0": sent[1].id}
    )
    store.record_planned(PIPE, 1, Writer(run_id="run-a", **kw))  # then the driver dies
    assert store.record_planned(PIPE, 1, Writer(run_id="run-b", **kw)) == "restored"
    store.record_committed(
        PIPE, 1, Writer(run_id="run-b", **kw), records=2, acked_ids={"0": sent[3].id}
    )


def test_checkpoints_page_shows_completed_and_restore(
    login, live_server, mq_config: MQConfig, artifacts_dir
) -> None:
    _pipeline_with_restore(mq_config)
    roles_sync()
    user = User.objects.create_user("cp", password="cp-pass-123")
    user.groups.add(Group.objects.get(name=VIEWER))
    page = login("cp", "cp-pass-123")
    page.goto(f"{live_server.url}/clusters/default/pipelines/")
    page.click(f"text={PIPE}")
    page.wait_for_selector("#history-table")
    assert page.locator('[data-count="completed"]').inner_text() == "2"
    assert page.locator('[data-count="restored"]').inner_text() == "1"
    assert page.locator('#history-table tr[data-status="completed"]').count() == 2
    assert "run-a" in page.locator("#card-restore").inner_text()
    assert page.locator('#history-table tr[data-batch="1"]').inner_text().count("restored") == 1
    assert page.locator("#partitions-table tbody tr").count() == 1
    page.screenshot(path=str(artifacts_dir / "checkpoints-page.png"), full_page=True)
