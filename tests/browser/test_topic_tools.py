"""The everyday topic tools in real Chromium: the export buttons of the topic (lag), pending
and DLQ pages download CSV/JSON files, and the topic page's partition panel renders the
skew of a hot partition and samples its keys on demand (htmx)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
import redis
from django.contrib.auth.models import Group, User
from playwright.sync_api import Page, expect

from dashboard.collectors.passes import collect_cluster
from dashboard.models import AuditEvent
from dashboard.permissions import roles_sync
from mqcore.config import MQConfig
from mqcore.producer import Producer
from mqcore.topics import Topics
from tests.integration.dlq_support import add_letters

pytestmark = [pytest.mark.browser, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

PASSWORD = "tools-pass-123"
TOPIC = "/clusters/default/topics/orders"


@pytest.fixture
def data(settings: Any, console_r: redis.Redis, r: redis.Redis, mq_config: MQConfig) -> None:
    settings.COLLECT_INTERVAL_S = 1
    roles_sync()
    Topics(mq_config).create("orders", 3, groups=["billing"])
    producer = Producer(mq_config)
    for i in range(60):  # partition 0 is hot: 50 of the 60 messages, most with key "hot"
        partition = 0 if i < 50 else 1 + i % 2
        producer.send(
            "orders", json.dumps({"n": i}), key="hot" if i % 5 else f"k{i}", partition=partition
        )
    for p in range(3):
        stream = mq_config.keys.partition("orders", p)
        r.xreadgroup("billing", "c1", {stream: ">"}, count=4)
    add_letters(r, mq_config, "orders", 6, partitions=3, payload=lambda i: f"=cmd|{i}")
    result = collect_cluster("default", claim=False)
    assert result.stored, result.error or result.skipped_reason
    user = User.objects.create_user("vera", password=PASSWORD)
    user.groups.add(Group.objects.get(name="Viewer"))


def download(page: Page, link: Any) -> tuple[str, str]:
    with page.expect_download() as info:
        link.click()
    got = info.value
    return got.suggested_filename, Path(got.path()).read_text()


def test_export_buttons_download_and_skew_panel_renders(
    data: None, login: Any, live_server: Any, artifacts_dir: Path
) -> None:
    page = login("vera", PASSWORD)
    page.goto(f"{live_server.url}{TOPIC}/")
    panel = page.locator("#partition-skew")
    expect(panel).to_be_visible()
    expect(panel.locator('[data-skew="length"]')).to_contain_text("hot")
    expect(panel.locator('tr[data-partition="0"]')).to_contain_text("hot")
    panel.locator('tr[data-partition="0"] button.sample-keys').click()
    sample = page.locator('#hot-keys [data-hot-keys="0"]')
    expect(sample).to_be_visible()
    expect(sample.locator("tbody tr").first).to_contain_text("hot")
    page.screenshot(path=str(artifacts_dir / "journey-tools-skew.png"))

    name, text = download(page, page.locator("#lag-export a[data-export=csv]"))
    assert name == "lag-orders-max50000.csv"
    lag = list(csv.DictReader(io.StringIO(text)))
    assert [(row["group"], row["partition"]) for row in lag] == [
        ("billing", "0"),
        ("billing", "1"),
        ("billing", "2"),
    ]
    assert lag[0]["lag"] == "46"

    page.goto(f"{live_server.url}{TOPIC}/pending/?group=billing&partition=0")
    name, text = download(page, page.locator("#pending-export a[data-export=csv]"))
    assert name == "pending-orders-billing-max50000.csv"
    pending = list(csv.DictReader(io.StringIO(text)))
    assert len(pending) == 4
    assert {row["partition"] for row in pending} == {"0"}

    page.goto(f"{live_server.url}{TOPIC}/dlq/")
    name, text = download(page, page.locator("#dlq-export-all a[data-export=json]"))
    assert name == "dlq-orders-max50000.json"
    letters = json.loads(text)
    assert len(letters["rows"]) == 6
    assert letters["rows_written"] == 6
    name, text = download(page, page.locator("#dlq-export-all a[data-export=csv]"))
    assert all(row["payload"].startswith("'=cmd") for row in csv.DictReader(io.StringIO(text)))

    kinds = AuditEvent.objects.filter(phase="intent").values_list("event_type", flat=True)
    assert sorted(kinds) == ["dlq.export", "dlq.export", "lag.export", "pending.export"]
