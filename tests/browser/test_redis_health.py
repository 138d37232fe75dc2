"""Redis health on the collectors page, in real Chromium: memory, the eviction policy
warning, persistence, clients and the slow log, whose commands are shown as text, never as
markup (an attacker-controlled key name, of no topic, is counted and never shown)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from django.contrib.auth.models import Group, User
from playwright.sync_api import expect

from dashboard.collectors.passes import collect_cluster
from dashboard.permissions import roles_sync
from mqcore.config import MQConfig
from mqcore.topics import Topics

pytestmark = [pytest.mark.browser, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

PASSWORD = "health-pass-123"
ODD_KEY = '<img src=x onerror="window.pwned=1">'


@pytest.fixture
def evicting_redis(r: redis.Redis) -> Iterator[None]:
    """The MQ Redis with an evicting policy and a slow log holding an odd key's command."""
    before = r.config_get("maxmemory-policy")["maxmemory-policy"]
    slower = r.config_get("slowlog-log-slower-than")["slowlog-log-slower-than"]
    r.config_set("maxmemory-policy", "allkeys-lru")
    r.config_set("slowlog-log-slower-than", 0)
    r.slowlog_reset()
    r.set(ODD_KEY, "x")
    r.config_set("slowlog-log-slower-than", slower)
    try:
        yield
    finally:
        r.config_set("maxmemory-policy", before)
        r.delete(ODD_KEY)


def test_collectors_page_shows_redis_health(
    evicting_redis: None,
    settings: Any,
    mq_config: MQConfig,
    login: Any,
    live_server: Any,
    artifacts_dir: Path,
) -> None:
    roles_sync()
    Topics(mq_config).create("orders", 2, groups=["billing"])
    result = collect_cluster("default", claim=False)
    assert result.stored, result.error or result.skipped_reason
    user = User.objects.create_user("vera", password=PASSWORD)
    user.groups.add(Group.objects.get(name="Viewer"))

    page = login("vera", PASSWORD)
    page.goto(f"{live_server.url}/collectors/")
    card = page.locator('section.redis-health[data-cluster="default"]')
    expect(card).to_be_visible()
    expect(card.get_by_role("alert")).to_contain_text("allkeys-lru")
    expect(card).to_contain_text("used, peak")
    expect(card).to_contain_text("connected")
    slowlog = card.locator("table.redis-slowlog")
    expect(slowlog).to_contain_text("key hidden")  # of no topic: counted, never named
    expect(slowlog).not_to_contain_text(ODD_KEY)
    assert card.locator("img").count() == 0
    assert page.evaluate("window.pwned") is None
    page.screenshot(path=str(artifacts_dir / "collectors-redis-health.png"))
