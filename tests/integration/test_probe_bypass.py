"""Issue 30, probed: the rate limits and scopes hold on the side doors too (real redis-server).

A failed "produce a test message" re-renders the browser with the request's own query, so
it must count like the browser it runs (a filter included)."""

from __future__ import annotations

import pytest
import redis
from django.test import Client, override_settings

from mqcore.config import MQConfig
from tests.integration.dlq_support import make_topic, role_user

pytestmark = [pytest.mark.redis, pytest.mark.django_db]

T = "/clusters/default/topics/orders"
NO_MATCH = 'key == "nope"'


@pytest.fixture
def orders(r: redis.Redis, mq_config: MQConfig) -> None:
    make_topic(mq_config, "orders", 2)
    pipe = r.pipeline(transaction=False)
    for i in range(20):
        pipe.xadd(mq_config.keys.partition("orders", i % 2), {"payload": f'{{"n": {i}}}'})
    pipe.execute()


@override_settings(RATELIMIT_FILTER="1/m")
def test_a_failed_produce_does_not_run_the_filtered_browser_past_the_limit(
    orders: None, console_r: redis.Redis
) -> None:
    viewer = Client()
    viewer.force_login(role_user("v", "Viewer"))
    assert viewer.get(f"{T}/messages/", {"where": NO_MATCH}).status_code == 200
    assert viewer.get(f"{T}/messages/", {"where": NO_MATCH}).status_code == 429
    # the produce form's error path renders the browser with the URL's filters
    side = viewer.post(
        f"{T}/messages/produce/?where={NO_MATCH}", {"payload": "x", "partition": "not a number"}
    )
    assert side.status_code == 429


def test_a_queued_bulk_replay_on_a_cluster_now_read_only_fails_clearly(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    """The cluster was made read-only after the job was queued: the runner ends the job
    as failed with the read-only message (never left running), and writes nothing."""
    from django.conf import settings

    from dashboard.models import ReplayJobStatus
    from dashboard.services import bulk_replay as svc
    from dashboard.services.audit import Actor
    from dashboard.services.replay_runner import replay_job_run
    from tests.integration.acl_support import mq_cluster
    from tests.integration.dlq_support import add_letters

    make_topic(mq_config, "orders", 1)
    add_letters(r, mq_config, "orders", 3)
    operator = role_user("op", "Operator")
    job = svc.dlq_bulk_preview(
        Actor(operator, cluster="default", topic="orders"), selection=svc.BulkSelection()
    )
    job = svc.dlq_bulk_start(Actor(operator), job=job, reason="t", enqueue=False)
    length = r.xlen(mq_config.keys.partition("orders", 0))
    with mq_cluster(**{**settings.MQ_CLUSTERS["default"], "read_only": True}):
        done = replay_job_run(job_id=str(job.pk))
    assert done is not None
    assert done.status == ReplayJobStatus.FAILED
    assert "read-only for cluster default" in done.error
    assert not done.lease_owner
    assert r.xlen(mq_config.keys.partition("orders", 0)) == length


def test_export_of_selected_letters_decodes_within_one_page_budget(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    """The selected letters' JSON export is one page: its letters share one decode budget
    (each letter had a fresh budget, so 1,000 letters of almost 1 MiB were all decoded and
    held in memory at once)."""
    from dashboard.clusters import reset_caches

    make_topic(mq_config, "orders", 1)
    big = "x" * 300_000
    ids = [
        r.xadd(mq_config.keys.dlq("orders"), {"payload": big, "partitionId": "0"}).decode()
        for _ in range(4)
    ]
    viewer = Client()
    viewer.force_login(role_user("v", "Viewer"))
    with override_settings(MQ_DECODE_BUDGET_BYTES=700_000):
        reset_caches()
        try:
            resp = viewer.post(f"{T}/dlq/export/", {"ids": ids})
        finally:
            reset_caches()
    assert resp.status_code == 200
    letters = resp.json()["letters"]
    assert len(letters) == 4
    decoded = [x for x in letters if x["payload"] == big]
    assert len(decoded) == 2  # the budget held two; the others carry the marker
    assert all(x["undecoded"] for x in letters if x["payload"] != big)


@override_settings(RATELIMIT_EXPORT="1/m")
def test_selected_letters_export_and_payload_downloads_count_as_exports(
    r: redis.Redis, mq_config: MQConfig, console_r: redis.Redis
) -> None:
    """Each reads up to 1,000 letters or a 64 MiB value: past the export limit, 429 on the
    pages and the API alike, nothing read."""
    make_topic(mq_config, "orders", 1)
    letter = r.xadd(mq_config.keys.dlq("orders"), {"payload": "p", "partition": "0"}).decode()
    entry = r.xadd(mq_config.keys.partition("orders", 0), {"payload": "m"}).decode()
    viewer = Client()
    viewer.force_login(role_user("v", "Viewer"))
    assert viewer.get(f"{T}/lag/export/").status_code == 200
    api = "/api/v1/clusters/default/topics/orders"
    refused = [
        viewer.post(f"{T}/dlq/export/", {"ids": [letter]}),
        viewer.post(f"{api}/dlq/export", {"ids": [letter]}, content_type="application/json"),
        viewer.get(f"{T}/dlq/{letter}/payload/"),
        viewer.get(f"{api}/dlq/{letter}/payload"),
        viewer.get(f"{T}/messages/0/{entry}/payload/"),
        viewer.head(f"{api}/messages/0/{entry}/payload"),
    ]
    assert [x.status_code for x in refused] == [429] * len(refused)


def test_a_bulk_replay_jobs_text_filter_is_a_digest_for_a_masked_viewer(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    """An Operator's text filter ran over a sensitive topic's payloads: a Viewer who sees
    them masked reads the job (listed on the DLQ page) with the filter as a digest, as the
    audit log keeps it, on the job's page and the API."""
    from dashboard.models import SensitiveTopic
    from dashboard.services import bulk_replay as svc
    from dashboard.services.audit import Actor
    from tests.integration.dlq_support import add_letters

    make_topic(mq_config, "orders", 1)
    add_letters(r, mq_config, "orders", 2, payload=lambda i: f"card 4111-1111-1111-1111 #{i}")
    SensitiveTopic.objects.create(cluster="", pattern="orders")
    operator = role_user("op", "Operator")
    secret = "4111-1111-1111-1111"
    job = svc.dlq_bulk_preview(
        Actor(operator, cluster="default", topic="orders"), selection=svc.BulkSelection(text=secret)
    )
    viewer = Client()
    viewer.force_login(role_user("v", "Viewer"))
    api = viewer.get(f"/api/v1/clusters/default/topics/orders/dlq/jobs/{job.pk}")
    page = viewer.get(f"{T}/dlq/jobs/{job.pk}/")
    assert api.status_code == 200
    assert page.status_code == 200
    assert secret not in api.content.decode()
    assert api.json()["filters"]["text"]["len"] == len(secret)
    assert secret not in page.content.decode()
    mine = Client()
    mine.force_login(operator)  # who may see the payloads reads the filter itself
    own = mine.get(f"/api/v1/clusters/default/topics/orders/dlq/jobs/{job.pk}")
    assert own.json()["filters"]["text"] == secret


@override_settings(RATELIMIT_EXPORT="1/m")
def test_exports_from_another_site_do_not_spend_the_victims_export_limit(
    orders: None, console_r: redis.Redis
) -> None:
    """A page on another site making a logged-in browser request exports is refused, and
    its requests do not use up the user's own exports."""
    viewer = Client()
    viewer.force_login(role_user("v", "Viewer"))
    for _ in range(3):
        lured = viewer.get(f"{T}/lag/export/", HTTP_SEC_FETCH_SITE="cross-site")
        assert lured.status_code == 403
    assert viewer.get(f"{T}/lag/export/", HTTP_SEC_FETCH_SITE="same-origin").status_code == 200
