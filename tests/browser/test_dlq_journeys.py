"""Dead-letter journeys in real Chromium: replay one and audit it, bulk replay 5,000 with
live progress, and what a viewer does not get to see."""

from __future__ import annotations

import re
import threading
import time

import pytest
from django.db import connections

from dashboard.models import ReplayJob, ReplayJobStatus
from dashboard.services.replay_runner import replay_job_run
from tests.integration.dlq_support import (
    PASSWORD,
    add_letters,
    make_topic,
    partition_len,
    role_user,
)

pytestmark = [pytest.mark.browser, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

DLQ = "/clusters/default/topics/orders/dlq/"


def test_operator_replays_one_letter_and_sees_the_audit_row(
    login, live_server, r, mq_config, artifacts_dir
) -> None:
    make_topic(mq_config)
    ids = add_letters(r, mq_config, "orders", 3)
    role_user("olga", "Operator")
    page = login("olga", PASSWORD)
    page.on("dialog", lambda dialog: dialog.accept())
    page.goto(f"{live_server.url}{DLQ}")
    row = page.locator(f"#letter-{ids[1]}")
    row.get_by_role("button", name="Replay").click()
    result = row.locator("[data-replay-result]")
    result.wait_for()
    assert result.get_attribute("data-replay-result") == "replayed"
    assert re.search(r"replayed as \d+-\d+ → orders p1", result.inner_text())
    assert partition_len(r, mq_config, "orders") == 1
    page.goto(f"{live_server.url}/audit/")
    audit_row = page.locator("#audit-table tbody tr").first
    assert audit_row.get_attribute("data-action") == "dlq.replay"
    assert audit_row.get_attribute("data-outcome") == "replayed"
    assert "olga" in audit_row.inner_text()
    assert ids[1] in audit_row.inner_text()
    page.screenshot(path=str(artifacts_dir / "dlq-audit-after-replay.png"), full_page=True)


def test_bulk_replay_of_5000_letters_shows_progress_to_completion(
    login, live_server, r, mq_config, artifacts_dir
) -> None:
    make_topic(mq_config)
    add_letters(r, mq_config, "orders", 5000)
    role_user("otto", "Operator")
    page = login("otto", PASSWORD)
    page.on("dialog", lambda dialog: dialog.accept())
    page.goto(f"{live_server.url}{DLQ}")
    page.click("#replay-all")
    page.wait_for_selector("#frozen-set")
    assert "5,000 letters" in page.inner_text("#frozen-set")
    assert page.locator("#plan-table tbody tr").count() == 50
    page.fill("#b-reason", "INC-5000 bulk replay")
    page.fill("#b-rate", "2500")
    page.click("#start-job")
    page.wait_for_selector("#job-progress")

    # The Celery worker's part, run here so it shares the test database.
    job = ReplayJob.objects.get(status=ReplayJobStatus.QUEUED)

    def work() -> None:
        try:
            replay_job_run(job_id=str(job.pk))
        finally:
            connections.close_all()

    worker = threading.Thread(target=work)
    worker.start()
    seen: set[str] = set()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        status = page.get_attribute("#job-progress", "data-status")
        seen.add(page.inner_text("#job-done"))
        if status == "completed":
            break
        page.wait_for_timeout(200)
    worker.join(timeout=30)
    assert page.get_attribute("#job-progress", "data-status") == "completed"
    assert page.inner_text('[data-count="replayed"]') == "5,000"
    assert page.inner_text('[data-count="skipped"]') == "0"
    assert page.inner_text('[data-count="failed"]') == "0"
    assert page.get_attribute("#job-progress progress", "value") == "5000"
    assert len(seen) >= 2, f"no intermediate progress seen: {seen}"  # it moved while we watched
    assert partition_len(r, mq_config, "orders") == 5000
    page.screenshot(path=str(artifacts_dir / "dlq-bulk-replay-done.png"), full_page=True)


def test_viewer_sees_no_replay_button(login, live_server, r, mq_config, artifacts_dir) -> None:
    make_topic(mq_config)
    ids = add_letters(r, mq_config, "orders", 2)
    role_user("vera", "Viewer")
    page = login("vera", PASSWORD)
    page.goto(f"{live_server.url}{DLQ}")
    assert page.locator("#dlq-table tbody tr").count() == 2
    assert page.get_by_role("button", name="Replay").count() == 0
    assert page.locator("#replay-all").count() == 0
    page.goto(f"{live_server.url}{DLQ}{ids[0]}/")
    assert page.locator("#replay-button").count() == 0
    assert page.get_by_text("Purge").count() == 0
    page.screenshot(path=str(artifacts_dir / "dlq-viewer.png"), full_page=True)
