"""Every page of the console with real data on it, for the checks that look at all of them
(accessibility, page weight, failed resources).

``seed`` makes the data through mqcore and real collector passes; ``visit_all`` walks the
pages as an Admin (who sees every control) and then logged out, calling ``check`` on each.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import redis
from django.contrib.auth.models import Group, User
from playwright.sync_api import Page

from dashboard.collectors.passes import collect_cluster
from dashboard.permissions import roles_sync
from mqcore.admin import Admin
from mqcore.checkpoints import CheckpointStore, Writer
from mqcore.config import MQConfig
from mqcore.producer import Producer
from mqcore.topics import Topics
from tests.integration.retry_items import schedule

PASSWORD = "tour-pass-123"
C = "/clusters/default"
PIPE = "order_totals.redis"


def collect() -> None:
    result = collect_cluster("default", claim=False)
    assert result.stored, result.error or result.skipped_reason


def seed(settings: Any, r: redis.Redis, cfg: MQConfig) -> dict[str, str]:
    """Topics with lag, pending entries, a lease, dead letters, an open alert, checkpoints."""
    settings.ALERT_DLQ_GROWTH = 1
    settings.DLQ_GROWTH_WINDOW_S = 0
    roles_sync()  # transactional tests flush the role groups the migrations created
    Topics(cfg).create("orders", 2, groups=["billing"])
    Topics(cfg).create("events", 1, groups=())
    producer = Producer(cfg)
    sent = [
        producer.send("orders", json.dumps({"order": i, "note": "<b>x</b>"}), key=f"k{i % 3}")
        for i in range(12)
    ]
    collect()
    stream0 = cfg.keys.partition("orders", 0)
    reply = r.xreadgroup("billing", "worker-1", {stream0: ">"}, count=3)
    pending = [entry_id.decode() for entry_id, _ in reply[0][1]]
    for n, entry_id in enumerate(pending):
        # the last one delivered often enough to be highlighted as poison
        count = 9 if n == 2 else 1
        r.xclaim(
            stream0, "billing", "worker-1", 0, [entry_id], idle=30_000 * (n + 1), retrycount=count
        )
    r.set(cfg.keys.lease("orders", "billing", 0), "worker-1", px=120_000)
    stream1 = cfg.keys.partition("orders", 1)
    reply = r.xreadgroup("billing", "worker-2", {stream1: ">"}, count=4)
    dead = [entry_id.decode() for entry_id, _ in reply[0][1]]
    Admin(cfg).move_to_dlq("orders", "billing", 1, dead, reason="handler rejected the message")
    for i in range(3):  # the retry set: two due, one scheduled in an hour
        schedule(
            r, cfg.keys, "orders", i % 2, json.dumps({"order": i, "note": "<b>x</b>"}),
            due_ms=int(time.time() * 1000) + (3_600_000 if i == 2 else -60_000 + i), key=f"k{i}",
        )  # fmt: skip
    store = CheckpointStore(cfg)
    kw = {"topic": "events", "sink": "redis", "group": PIPE}
    store.record_planned(PIPE, 0, Writer(run_id="run-a", **kw))
    store.record_committed(PIPE, 0, Writer(run_id="run-a", **kw), records=0, acked_ids={})
    store.record_planned(PIPE, 1, Writer(run_id="run-a", **kw))
    store.record_failed(PIPE, 1, run_id="run-a", reason="sink timeout")
    time.sleep(1.1)  # a second sample one second later: rates and trends have a span
    collect()
    user = User.objects.create_user("tour-admin", password=PASSWORD)
    user.groups.add(Group.objects.get(name="Admin"))
    letters = r.xrevrange(cfg.keys.dlq("orders"), count=1)
    return {
        "message": f"{C}/topics/orders/messages/{sent[0].partition}/{sent[0].id}/",
        "letter": f"{C}/topics/orders/dlq/{letters[0][0].decode()}/",
    }


def visit_all(
    page: Page,
    base: str,
    login: Callable[[str, str], Page],
    paths: dict[str, str],
    check: Callable[[str, Page], None],
) -> list[str]:
    """Visit every page, call ``check(name, page)`` once it is loaded; returns the names."""
    seen: list[str] = []

    def at(name: str, path: str, ready: str | None = None) -> None:
        page.goto(base + path)
        page.wait_for_load_state("networkidle")
        if ready:  # charts draw once scrolled to: plotly.js loads when they are near
            page.locator(".chart-grid").scroll_into_view_if_needed()
            page.wait_for_selector(ready)
            page.wait_for_load_state("networkidle")
        check(name, page)
        seen.append(name)

    at("login", "/login/")
    login("tour-admin", PASSWORD)
    at("overview", f"{C}/")
    at("topic", f"{C}/topics/orders/", ready='[data-chart="lag"][data-rendered="plot"]')
    at("pending", f"{C}/topics/orders/pending/?group=billing")
    at("leases", f"{C}/topics/orders/leases/")
    at("message", paths["message"])
    at("browse", f"{C}/topics/orders/messages/?where=payload.order+%3E+2&limit=5")
    at("dlq", f"{C}/topics/orders/dlq/")
    at("dlq-letter", paths["letter"])
    page.goto(base + f"{C}/topics/orders/dlq/")
    page.click("#replay-all")
    page.wait_for_selector("#frozen-set")
    page.wait_for_load_state("networkidle")
    check("bulk-replay", page)
    seen.append("bulk-replay")
    at("position", f"{C}/topics/orders/groups/billing/position/")
    at("topic-create", f"{C}/admin/topics/")
    at("topic-admin", f"{C}/topics/orders/admin/")
    at("topic-delete-plan", f"{C}/topics/orders/admin/delete/plan/")
    at("trim-plan", f"{C}/topics/orders/admin/trim/plan/?maxlen=1")
    at("group-delete-plan", f"{C}/topics/orders/groups/billing/delete/plan/")
    at("timeline", f"{C}/timeline/")
    at("pipelines", f"{C}/pipelines/")
    at("pipeline", f"{C}/pipelines/{PIPE}/")
    at("collectors", "/collectors/")
    at("alerts", "/alerts/")
    at("audit", "/audit/")
    at("retention", f"{C}/topics/orders/retention/")
    at("retries", f"{C}/retries/")
    at("topic-retries", f"{C}/topics/orders/retries/")
    at("access", "/access/")
    at("access-user", "/access/users/tour-admin/")
    at("not-found", "/no-such-page/")
    return seen


def log_in(page: Page, base: str) -> Callable[[str, str], Page]:
    """The conftest's login, for a page from a context of the test's own."""

    def _login(username: str, password: str) -> Page:
        page.goto(f"{base}/login/")
        page.fill("#id_username", username)
        page.fill("#id_password", password)
        page.click("button[type=submit]")
        page.wait_for_load_state("networkidle")
        return page

    return _login
