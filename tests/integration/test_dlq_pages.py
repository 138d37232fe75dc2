"""Dead-letter pages as an operator, a viewer and an admin see them (real Redis)."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from dashboard.models import AuditEvent, ReplayJob, ReplayJobStatus, SensitiveTopic
from dashboard.services.audit import Actor
from dashboard.services.replay_runner import replay_job_run
from tests.integration.dlq_support import add_letters, make_topic, partition_len, role_user

pytestmark = [pytest.mark.redis, pytest.mark.django_db]

BASE = "/clusters/default/topics/orders/dlq/"


@pytest.fixture
def letters(r, mq_config) -> list[str]:
    make_topic(mq_config)
    return add_letters(r, mq_config, "orders", 7)


def client_for(role: str | None, name: str | None = None) -> Client:
    client = Client()
    client.force_login(role_user(name or (role or "nobody").lower(), role))
    return client


def test_list_newest_first_with_cursor_paging(letters) -> None:
    c = client_for("Viewer")
    html = c.get(BASE).content.decode()
    assert html.index(letters[-1]) < html.index(letters[0])
    page1 = c.get("/api/v1/clusters/default/topics/orders/dlq?limit=3").json()
    assert [x["id"] for x in page1["letters"]] == letters[::-1][:3]
    page2 = c.get(
        f"/api/v1/clusters/default/topics/orders/dlq?limit=3&before={page1['next_cursor']}"
    )
    assert [x["id"] for x in page2.json()["letters"]] == letters[::-1][3:6]
    html2 = c.get(f"{BASE}?before={letters[3]}").content.decode()
    assert letters[2] in html2
    assert letters[5] not in html2


def test_filters_partition_key_text(letters) -> None:
    c = client_for("Viewer")
    body = c.get(f"{BASE}?partition=1").content.decode()
    assert letters[1] in body
    assert letters[0] not in body
    body = c.get(f"{BASE}?key=k4").content.decode()
    assert letters[4] in body
    assert letters[3] not in body
    body = c.get(f"{BASE}?text=boom+6").content.decode()
    assert letters[6] in body
    assert letters[5] not in body
    assert c.get(f"{BASE}?partition=x").status_code == 400
    assert c.get(f"{BASE}?since=yesterday").status_code == 400


def test_columns_and_permalink(letters) -> None:
    c = client_for("Viewer")
    body = c.get(BASE).content.decode()
    for text in ("Failed at", "Original id", "Partition", "Key", "Retries", "Error", "Payload"):
        assert text in body
    assert f'href="{BASE}{letters[0]}/"' in body
    detail = c.get(f"{BASE}{letters[0]}/").content.decode()
    assert "&quot;order&quot;: 0" in detail  # pretty JSON, escaped
    assert "x-runtime-error-message" in detail
    assert "Never replayed" in detail


def test_viewer_sees_no_replay_button_and_gets_403(letters) -> None:
    c = client_for("Viewer")
    assert "hx-post" not in c.get(BASE).content.decode()
    assert 'id="replay-button"' not in c.get(f"{BASE}{letters[0]}/").content.decode()
    assert c.post(f"{BASE}{letters[0]}/replay/").status_code == 403
    assert c.post(f"{BASE}purge/", {"confirm": "orders", "reason": "x"}).status_code == 403


def test_operator_replays_in_place_and_history_shows(r, mq_config, letters) -> None:
    c = client_for("Operator")
    page = c.get(BASE).content.decode()
    assert "hx-post" in page
    assert "Purge" not in page
    resp = c.post(f"{BASE}{letters[2]}/replay/", HTTP_HX_REQUEST="true")
    assert resp.status_code == 200
    assert 'data-replay-result="replayed"' in resp.content.decode()
    assert partition_len(r, mq_config, "orders") == 1
    again = c.post(f"{BASE}{letters[2]}/replay/", HTTP_HX_REQUEST="true").content.decode()
    assert "already-replayed" in again
    assert partition_len(r, mq_config, "orders") == 1
    detail = c.get(f"{BASE}{letters[2]}/").content.decode()
    assert "operator" in detail
    assert "Never replayed" not in detail
    assert "not consumed yet" in detail
    outcomes = list(
        AuditEvent.objects.filter(event_type="dlq.replay", phase="outcome").values_list(
            "outcome", flat=True
        )
    )
    assert sorted(outcomes) == ["already-replayed", "replayed"]


def test_operator_cannot_force_or_target(letters) -> None:
    c = client_for("Operator")
    assert c.post(f"{BASE}{letters[0]}/replay/", {"force": "1"}).status_code == 403
    assert c.post(f"{BASE}{letters[0]}/replay/", {"target_partition": "1"}).status_code == 403


def test_admin_force_replay_needs_reason_and_replays_again(r, mq_config, letters) -> None:
    c = client_for("Admin")
    c.post(f"{BASE}{letters[0]}/replay/")
    assert c.post(f"{BASE}{letters[0]}/replay/", {"force": "1"}).status_code == 400
    resp = c.post(f"{BASE}{letters[0]}/replay/", {"force": "1", "reason": "INC-1"})
    assert resp.status_code == 302
    assert partition_len(r, mq_config, "orders") == 2


def test_admin_delete_and_purge_with_typed_confirmation(r, mq_config, letters) -> None:
    c = client_for("Admin")
    assert c.post(f"{BASE}{letters[0]}/delete/", {"reason": ""}).status_code == 400
    assert c.post(f"{BASE}{letters[0]}/delete/", {"reason": "dup"}).status_code == 302
    assert r.xlen(mq_config.keys.dlq("orders")) == 6
    assert c.post(f"{BASE}purge/", {"confirm": "order", "reason": "x"}).status_code == 400
    assert r.xlen(mq_config.keys.dlq("orders")) == 6
    assert c.post(f"{BASE}purge/", {"confirm": "orders", "reason": "x"}).status_code == 302
    assert r.xlen(mq_config.keys.dlq("orders")) == 0
    assert AuditEvent.objects.filter(event_type="dlq.purge", outcome="purged").count() == 1


def test_export_selected_as_json(letters) -> None:
    c = client_for("Viewer")
    resp = c.post(f"{BASE}export/", {"ids": [letters[1], letters[3]]})
    assert resp.status_code == 200
    data = json.loads(resp.content)
    assert [x["id"] for x in data["letters"]] == [letters[1], letters[3]]
    assert json.loads(data["letters"][0]["payload"]) == {"order": 1}


def test_sensitive_topic_masks_payload_for_viewer(letters) -> None:
    SensitiveTopic.objects.create(pattern="ord*")
    viewer = client_for("Viewer")
    body = viewer.get(f"{BASE}{letters[0]}/").content.decode()
    assert "masked" in body
    assert "&quot;order&quot;" not in body
    exported = json.loads(viewer.post(f"{BASE}export/", {"ids": [letters[0]]}).content)
    assert "order" not in exported["letters"][0]["payload"]
    operator = client_for("Operator")
    assert "&quot;order&quot;" in operator.get(f"{BASE}{letters[0]}/").content.decode()


def test_bulk_preview_dry_run_start_and_result(r, mq_config, letters) -> None:
    c = client_for("Operator")
    c.post(f"{BASE}{letters[0]}/replay/")  # one already replayed: skipped by the job
    resp = c.post(f"{BASE}bulk/", {"all": "1"})
    assert resp.status_code == 302
    job = ReplayJob.objects.get()
    assert job.status == ReplayJobStatus.DRAFT
    assert job.total == 7
    preview = c.get(resp["Location"]).content.decode()
    assert "7 letters" in preview
    assert letters[0] in preview
    assert letters[-1] in preview
    # the dry run says in words what each letter would do (the code stays as data-reason)
    assert "skip: already replayed" in preview
    assert "will replay to orders/p" in preview
    assert 'data-reason="already-replayed"' in preview
    assert ">would-replay<" not in preview
    add_letters(r, mq_config, "orders", 3)  # arrive after the preview: not in the frozen set
    assert c.post(f"{resp['Location']}start/", {"reason": ""}).status_code == 400
    c.post(f"{resp['Location']}start/", {"reason": "INC-7", "rate_limit": "0"})
    job.refresh_from_db()
    assert job.status == ReplayJobStatus.QUEUED
    replay_job_run(job_id=str(job.pk))  # what the Celery task does
    job.refresh_from_db()
    assert (job.status, job.replayed, job.skipped, job.failed) == ("completed", 6, 1, 0)
    done = c.get(resp["Location"]).content.decode()
    assert 'class="status job-state job-completed" data-state="completed"' in done
    assert partition_len(r, mq_config, "orders") == 7
    progress = c.get(f"{resp['Location']}progress/", HTTP_HX_REQUEST="true")
    assert progress.status_code == 286
    assert 'data-count="replayed">6<' in progress.content.decode()
    intent = AuditEvent.objects.get(event_type="dlq.bulk_replay", phase="intent")
    assert intent.reason == "INC-7"
    assert f"job:{job.pk}" in intent.frozen_set
    assert intent.completion.counts == {"replayed": 6, "skipped": 1, "failed": 0}


def test_bulk_selected_ids_and_cancel(letters) -> None:
    c = client_for("Operator")
    resp = c.post(f"{BASE}bulk/", {"ids": letters[:3]})
    job = ReplayJob.objects.get()
    assert job.total == 3
    c.post(f"{resp['Location']}cancel/")
    job.refresh_from_db()
    assert job.status == ReplayJobStatus.CANCELLED
    # one form value carrying newline-separated ids is refused, nothing frozen
    smuggled = c.post(f"{BASE}bulk/", {"ids": ["\n".join(letters[:3])]})
    assert smuggled.status_code == 400
    assert b"invalid stream id" in smuggled.content
    assert ReplayJob.objects.count() == 1


def test_pending_claim_and_move_to_dlq(r, mq_config) -> None:
    make_topic(mq_config, "jobs", 1)
    key = mq_config.keys.partition("jobs", 0)
    ids = [r.xadd(key, {"payload": f"p{i}"}).decode() for i in range(3)]
    r.xreadgroup("default-group", "c1", {key: ">"}, count=10)
    c = client_for("Operator")
    url = "/clusters/default/topics/jobs/pending/"
    resp = c.post(
        f"{url}claim/",
        {"group": "default-group", "entry": [f"0:{ids[0]}"], "consumer": "c2"},
    )
    assert resp.status_code == 302
    owners = {
        e["message_id"].decode(): e["consumer"].decode()
        for e in r.xpending_range(key, "default-group", "-", "+", 10)
    }
    assert owners[ids[0]] == "c2"
    assert (
        c.post(
            f"{url}move-to-dlq/", {"group": "default-group", "entry": [f"0:{ids[1]}"]}
        ).status_code
        == 400
    )
    resp = c.post(
        f"{url}move-to-dlq/",
        {"group": "default-group", "entry": [f"0:{ids[1]}", f"0:{ids[2]}"], "reason": "poison"},
    )
    assert resp.status_code == 302
    assert r.xlen(mq_config.keys.dlq("jobs")) == 2
    assert AuditEvent.objects.filter(
        event_type="pending.move_to_dlq", outcome="moved"
    ).get().counts == {"moved": 2, "not_pending": 0}
    viewer = client_for("Viewer")
    assert (
        viewer.post(
            f"{url}claim/", {"group": "default-group", "entry": [f"0:{ids[0]}"], "consumer": "x"}
        ).status_code
        == 403
    )


def test_cancel_a_running_job_keeps_exact_counts(r, mq_config, monkeypatch) -> None:
    """Cancel lands between two rate-limited chunks: the job stops there, counts exact."""
    import time as real_time
    from types import SimpleNamespace

    from dashboard.services import bulk_replay as svc
    from dashboard.services import replay_runner

    make_topic(mq_config)
    add_letters(r, mq_config, "orders", 300)
    operator = role_user("op", "Operator")
    job = svc.dlq_bulk_preview(
        Actor(operator, cluster="default", topic="orders"), selection=svc.BulkSelection()
    )
    job = svc.dlq_bulk_start(Actor(operator), job=job, reason="t", rate_limit=100, enqueue=False)

    def pause(_seconds: float) -> None:  # the operator clicks Cancel during the first pause
        svc.dlq_bulk_cancel(Actor(operator), job=ReplayJob.objects.get(pk=job.pk))

    monkeypatch.setattr(
        replay_runner, "time", SimpleNamespace(monotonic=real_time.monotonic, sleep=pause)
    )
    done = replay_job_run(job_id=str(job.pk))
    assert done is not None
    assert done.status == ReplayJobStatus.CANCELLED
    assert (done.cursor, done.replayed) == (100, 100)
    assert partition_len(r, mq_config, "orders") == 100
    intent = AuditEvent.objects.get(event_type="dlq.bulk_replay", phase="intent")
    assert intent.completion.outcome == "cancelled"
    assert intent.completion.counts == {"replayed": 100, "skipped": 0, "failed": 0}


def test_list_times_are_relative_with_absolute_on_hover_and_cells_do_not_wrap(r, mq_config) -> None:
    make_topic(mq_config)
    long_payload = lambda i: json.dumps({"order": i, "blob": "x" * 400})  # noqa: E731
    ids = add_letters(r, mq_config, "orders", 2, payload=long_payload)
    r.xadd(mq_config.keys.dlq("orders"), {"originalTopic": "orders", "payload": "no failedAt"})
    html = client_for("Viewer").get(BASE).content.decode()
    failed_at = r.xrange(mq_config.keys.dlq("orders"), ids[0], ids[0])[0][1][b"failedAt"].decode()
    assert f">{failed_at}<" not in html  # not the raw ISO text any more
    iso = failed_at.replace("Z", "+00:00")
    assert f'<time datetime="{iso}" title="{iso}" data-relative>' in html
    assert html.count("data-relative>") >= 3  # the letter without failedAt: time of its id
    assert html.count('<td class="nowrap">') >= 6  # failed at + original id + key, per row
    assert html.count('<code class="ellipsis" title="{&quot;order&quot;: 1, ') == 1  # one line
    detail = client_for("Viewer", "v2").get(f"{BASE}{ids[0]}/").content.decode()
    assert f'<dt>Failed at</dt><dd><time datetime="{iso}"' in detail
    assert f'<dt>Produced at</dt><dd><time datetime="{iso}"' in detail


def test_empty_dlq_says_nothing_failed(mq_config) -> None:
    make_topic(mq_config)
    c = client_for("Viewer")
    assert "No dead letters: nothing failed." in c.get(BASE).content.decode()
    assert "No dead letters match these filters." in c.get(f"{BASE}?key=zz").content.decode()


def test_live_toggle_only_on_pages_that_poll(letters) -> None:
    c = client_for("Operator")
    resp = c.post(f"{BASE}bulk/", {"ids": letters[:2]})
    pages = {
        "list": c.get(BASE),
        "letter": c.get(f"{BASE}{letters[0]}/"),
        "bulk preview": c.get(resp["Location"]),
        "audit": c.get("/audit/"),
        "404": c.get("/clusters/default/topics/orders/dlq/9-9/"),
    }
    for name, response in pages.items():
        html = response.content.decode()
        assert "data-live" not in html.replace("data-live-", ""), name
        assert "data-pause-live" not in html, f"{name} shows a Live/Pause toggle"
    assert '<a href="/audit/" aria-current="page">Audit</a>' in pages["audit"].content.decode()
