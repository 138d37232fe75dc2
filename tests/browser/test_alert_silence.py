"""An Admin silences an open alert with a reason in Chromium and sees it marked silenced;
the alerts page lists it still, with who silenced it, until when and why."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from django.contrib.auth.models import Group, User
from playwright.sync_api import expect

from dashboard.collectors.passes import collect_cluster
from dashboard.models import AuditEvent, AuditEventType
from dashboard.permissions import roles_sync
from mqcore.config import MQConfig
from mqcore.topics import Topics

pytestmark = [pytest.mark.browser, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

PASSWORD = "silence-pass-123"
ALERT = "dlq_growth:orders"


def test_admin_silences_an_open_alert(
    login: Any,
    live_server: Any,
    settings: Any,
    mq_config: MQConfig,
    r: redis.Redis,
    console_r: redis.Redis,
    artifacts_dir: Any,
) -> None:
    settings.ALERT_DLQ_GROWTH = 1
    settings.DLQ_GROWTH_WINDOW_S = 0
    roles_sync()
    Topics(mq_config).create("orders", 1)
    assert collect_cluster("default", claim=False).stored
    r.xadd(mq_config.keys.dlq("orders"), {"payload": "<img src=x onerror=alert(1)>"})
    assert collect_cluster("default", claim=False).stored
    user = User.objects.create_user("oncall", password=PASSWORD)
    user.groups.add(Group.objects.get(name="Admin"))

    page = login("oncall", PASSWORD)
    page.goto(f"{live_server.url}/alerts/")
    row = page.locator(f'#open-alerts tr[data-alert="{ALERT}"]')
    expect(row).to_be_visible()
    expect(row).not_to_have_attribute("data-muted", "silence")
    form = page.locator("#mute-alert form")
    form.get_by_label("Alert").select_option(label=f"default · {ALERT}")
    form.get_by_label("silence").check()
    form.get_by_label("Duration", exact=True).select_option("custom")
    form.get_by_label("Custom duration").fill("90m")
    form.get_by_label("Reason (required)").fill("known poison batch, fix deploying")
    form.get_by_role("button", name="Apply").click()
    page.wait_for_load_state("networkidle")

    expect(page.locator(".messages")).to_contain_text(f"Silenced {ALERT}")
    row = page.locator(f'#open-alerts tr[data-alert="{ALERT}"]')
    expect(row).to_have_attribute("data-muted", "silence")
    expect(row.locator(".alert-mute")).to_contain_text("silenced until ")
    expect(row.locator(".alert-mute")).to_contain_text(
        "by oncall: known poison batch, fix deploying"
    )
    page.screenshot(path=str(artifacts_dir / "alert-silenced.png"))
    intent = AuditEvent.objects.get(phase="intent", event_type=AuditEventType.ALERT_SILENCE)
    assert intent.actor == "oncall"
    assert intent.detail["duration_s"] == 5400
    assert intent.detail["alert"] == ALERT
    assert AuditEvent.objects.filter(phase="outcome", outcome="silenced").exists()

    page.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name="Lift").click()
    page.wait_for_load_state("networkidle")
    expect(page.locator(f'#open-alerts tr[data-alert="{ALERT}"]')).not_to_have_attribute(
        "data-muted", "silence"
    )
