"""The SRE journeys end to end: real Chromium, real MQ data through mqcore on the
private Redis, real collector passes (``collect_cluster``) between the steps.

Every step leaves a ``journey-<name>-<step>.png`` in the artifacts directory. What
``test_pages_live.py`` and ``test_dlq_journeys.py`` prove in detail (header-link sorting,
lease countdown, replay from the list, a 5,000-letter bulk job) is not repeated here;
these tests walk the whole journey an on-call engineer takes.
"""

from __future__ import annotations

import csv
import io
import json
import math
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from django.contrib.auth.models import Group, User
from django.db import connections
from playwright.sync_api import Page, expect

from dashboard.collectors.passes import collect_cluster
from dashboard.models import ReplayJob, ReplayJobStatus
from dashboard.permissions import roles_sync
from dashboard.selectors.pages.pending import poison_threshold
from dashboard.services import dlq as dlq_svc
from dashboard.services.audit import Actor
from dashboard.services.replay_runner import replay_job_run
from mqcore.admin import Admin
from mqcore.checkpoints import CheckpointStore, PlanOutcome, Writer, new_run_id
from mqcore.config import MQConfig
from mqcore.consumer import Consumer, ConsumerOptions, Outcome
from mqcore.dlq import DeadLetters
from mqcore.models import Message
from mqcore.producer import Producer
from mqcore.topics import Topics
from tests.integration.pages_support import store_pass
from tests.snapshot_parts import builtins

pytestmark = [pytest.mark.browser, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

PASSWORD = "journey-pass-123"
CLUSTER = "/clusters/default"


# --- helpers ---------------------------------------------------------------------------------


@pytest.fixture
def fast_console(settings: Any, console_r: redis.Redis) -> None:
    """Polls every second; statuses decided over two samples (so a lag rise shows at once)."""
    settings.COLLECT_INTERVAL_S = 1
    settings.STATUS_WINDOW_SAMPLES = 2
    roles_sync()  # transactional tests flush the role groups the migrations created


def make_user(name: str, role: str) -> tuple[str, str]:
    user = User.objects.create_user(name, password=PASSWORD)
    user.groups.add(Group.objects.get(name=role))
    return name, PASSWORD


def collect() -> dict[str, Any]:
    """One real collector pass (what beat runs every interval), stored."""
    result = collect_cluster("default", claim=False)
    assert result.stored, result.error or result.skipped_reason
    assert result.snapshot is not None
    return builtins(result.snapshot)  # the stored snapshot's fields


def shot(page: Page, artifacts_dir: Path, journey: str, step: str) -> None:
    page.screenshot(path=str(artifacts_dir / f"journey-{journey}-{step}.png"))


def wait_until(predicate: Callable[[], Any], what: str, timeout: float = 15.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def switch_user(page: Page, login: Callable[[str, str], Page], who: tuple[str, str]) -> Page:
    page.context.clear_cookies()
    return login(*who)


def forged_post(page: Page, url: str, data: dict[str, str]) -> int:
    """POST from the page itself with its real CSRF token (what a crafted request would do)."""
    return int(
        page.evaluate(
            """async ([url, data]) => {
                const token = JSON.parse(document.body.getAttribute("hx-headers"))["X-CSRFToken"];
                const body = new URLSearchParams(data);
                const r = await fetch(url, {method: "POST", body: body,
                    headers: {"X-CSRFToken": token}, redirect: "manual"});
                return r.status;
            }""",
            [url, data],
        )
    )


def pend(
    r: redis.Redis,
    cfg: MQConfig,
    topic: str,
    group: str,
    partition: int,
    consumer: str,
    shape: list[tuple[int, int]],
) -> list[str]:
    """Deliver the partition's next entries to ``consumer`` and age them: (idle ms, deliveries)."""
    stream = cfg.keys.partition(topic, partition)
    reply = r.xreadgroup(group, consumer, {stream: ">"}, count=len(shape))
    ids = [entry_id.decode() for entry_id, _ in reply[0][1]]
    for entry_id, (idle, count) in zip(ids, shape, strict=True):
        r.xclaim(stream, group, consumer, 0, [entry_id], idle=idle, retrycount=count)
    return ids


def dead_letter_all(r: redis.Redis, cfg: MQConfig, topic: str, group: str, parts: int) -> None:
    """Hand every entry to a consumer and dead-letter it through mqcore (as an operator would)."""
    admin = Admin(cfg)
    for p in range(parts):
        reply = r.xreadgroup(group, "worker-1", {cfg.keys.partition(topic, p): ">"})
        ids = [entry_id.decode() for entry_id, _ in reply[0][1]] if reply else []
        admin.move_to_dlq(topic, group, p, ids, reason="handler rejected the message")


@pytest.fixture
def consumers(mq_config: MQConfig) -> Iterator[list[Consumer]]:
    """Real mqcore consumers the test starts; all stopped at the end."""
    started: list[Consumer] = []
    yield started
    for consumer in started:
        consumer.stop(timeout=10)


def run_consumer(
    mq_config: MQConfig,
    started: list[Consumer],
    topic: str,
    name: str,
    handler: Callable[[Message], Outcome | None],
    **opts: Any,
) -> Consumer:
    options = ConsumerOptions(
        group=opts.pop("group", "billing"),
        name=name,
        lease_ttl_ms=1500,
        renew_interval_ms=500,
        rebalance_interval_ms=250,
        block_ms=100,
        retry_move_interval_ms=0,
        **opts,
    )
    consumer = Consumer(mq_config, topic, handler, options)
    consumer.start()
    started.append(consumer)
    return consumer


# --- 1. roles --------------------------------------------------------------------------------


def test_journey_roles_viewer_operator_admin(
    login, live_server, fast_console, r, mq_config, artifacts_dir
) -> None:
    Topics(mq_config).create("orders", 2, groups=["billing"])
    producer = Producer(mq_config)
    for i in range(4):
        producer.send("orders", json.dumps({"order": i}), key=f"k{i}", partition=0)
    dead_letter_all(r, mq_config, "orders", "billing", 1)  # partition 0 -> DLQ
    Producer(mq_config).send("orders", "still pending", partition=1)
    pend(r, mq_config, "orders", "billing", 1, "worker-2", [(30_000, 1)])
    letter = DeadLetters(mq_config).page("orders").letters[0].id
    collect()
    viewer = make_user("vic", "Viewer")
    operator = make_user("olive", "Operator")
    admin = make_user("ada", "Admin")
    base = f"{live_server.url}{CLUSTER}/topics/orders"

    page = login(*viewer)
    assert "vic · Viewer" in page.inner_text(".who")
    page.goto(f"{base}/dlq/")
    assert page.locator("#dlq-table tbody tr").count() >= 1
    assert page.get_by_role("button", name="Replay").count() == 0
    assert page.locator("#replay-all, [data-action=replay-selected]").count() == 0
    assert page.get_by_role("heading", name="Purge this DLQ").count() == 0
    shot(page, artifacts_dir, "roles", "viewer-dlq")
    page.goto(f"{base}/pending/?group=billing")
    assert page.locator("#pending-table tbody tr").count() == 1
    assert page.locator("#pending-actions").count() == 0
    assert page.locator("#pending-table input[type=checkbox]").count() == 0
    shot(page, artifacts_dir, "roles", "viewer-pending")
    length_before = int(r.xlen(mq_config.keys.partition("orders", 0)))
    assert forged_post(page, f"{base}/dlq/{letter}/replay/", {"reason": "forged"}) == 403
    assert forged_post(page, f"{base}/dlq/{letter}/delete/", {"reason": "forged"}) == 403
    entry = page.locator("#pending-table tbody tr th code").first.inner_text()
    claim = {"group": "billing", "entry": f"1:{entry}", "consumer": "evil", "reason": "x"}
    assert forged_post(page, f"{base}/pending/claim/", claim) == 403
    assert int(r.xlen(mq_config.keys.partition("orders", 0))) == length_before
    assert DeadLetters(mq_config).replays("orders", letter) == []

    page = switch_user(page, login, operator)
    page.goto(f"{base}/dlq/")
    assert page.get_by_role("button", name="Replay").count() >= 1
    assert page.locator("#replay-all").is_visible()
    assert page.get_by_role("heading", name="Purge this DLQ").count() == 0
    page.goto(f"{base}/pending/?group=billing")
    expect(page.locator("#pending-actions")).to_be_visible()
    shot(page, artifacts_dir, "roles", "operator-pending")
    assert forged_post(page, f"{base}/dlq/{letter}/delete/", {"reason": "not mine"}) == 403

    page = switch_user(page, login, admin)
    page.goto(f"{base}/dlq/")
    expect(page.get_by_role("heading", name="Purge this DLQ")).to_be_visible()
    assert page.locator("#bulk-tt").is_visible()  # replay to another target: admin only
    shot(page, artifacts_dir, "roles", "admin-dlq")


# --- 2. overview: a lag rise, live ------------------------------------------------------------


def backfill_history(topic: str, group: str, minutes: int = 40) -> None:
    """The last ``minutes`` of series as earlier collector passes stored them: a consumer that
    kept up (lag 0-2, about one message a second) - so the charts have a past to compare with.
    """
    now = int(time.time() * 1000)
    entity = f"{topic}/{group}"
    for i in range(minutes):
        at = now - (minutes - i) * 60_000
        lag = float(round(1 + math.sin(i / 2.5)))
        points = [
            ("lag", topic, lag),
            ("lag", entity, lag),
            ("lag_ms", topic, lag * 400),
            ("lag_ms", entity, lag * 400),
            ("produced_total", topic, 60.0 * i + lag),
            ("consumed_total", entity, 60.0 * i),
        ]
        store_pass(None, points=points, now_ms=at)


def test_journey_overview_lag_rise_live_filter_and_chart(
    login, live_server, fast_console, r, mq_config, artifacts_dir
) -> None:
    topics = Topics(mq_config)
    topics.create("orders", 4, groups=["billing"])
    topics.create("payments", 2, groups=["ledger"])
    topics.create("emails", 2, groups=["sender"])
    producer = Producer(mq_config)
    for i in range(3):
        producer.send("orders", json.dumps({"order": i}), key=f"customer-{i}")
    for i in range(6):
        producer.send("payments", json.dumps({"payment": i}), key=f"p{i}")
    for p in range(2):  # payments is read and acked: lag 0
        stream = mq_config.keys.partition("payments", p)
        reply = r.xreadgroup("ledger", "ledger-1", {stream: ">"})
        r.xack(stream, "ledger", *[entry_id for entry_id, _ in reply[0][1]])
    backfill_history("orders", "billing")
    collect()
    viewer = make_user("night-sre", "Viewer")
    page = login(*viewer)
    page.goto(f"{live_server.url}{CLUSTER}/")
    lag = page.locator('tr[data-topic="orders"] td[data-col="lag"]')
    assert lag.inner_text().strip() == "3"
    assert page.locator("#overview-table tbody tr").count() == 3
    shot(page, artifacts_dir, "overview", "before")
    page.evaluate("window.__noReload = true")

    for i in range(9):
        producer.send("orders", json.dumps({"order": 100 + i}), key=f"customer-{i}")
    snap = collect()
    orders = next(t for t in snap["topics"] if t["topic"] == "orders")
    # nobody consumes: STOP once the window passed without activity, STALL before that
    assert orders["status"] in ("STALL", "STOP")
    expect(lag).to_have_text("12", timeout=10_000)  # the htmx poll, no reload
    status = page.locator('tr[data-topic="orders"] .status').first
    expect(status).to_contain_text(orders["status"])
    assert page.evaluate("window.__noReload") is True
    shot(page, artifacts_dir, "overview", "lag-rise")

    page.get_by_label("Only topics with problems").check()
    page.wait_for_url("**problems=1**")
    rows = page.locator("#overview-table tbody tr[data-topic]")
    expect(rows).to_have_count(1)
    assert rows.first.get_attribute("data-topic") == "orders"
    shot(page, artifacts_dir, "overview", "only-problems")

    page.get_by_role("link", name="orders", exact=True).click()
    page.wait_for_url("**/topics/orders/")
    page.locator(".chart-grid").scroll_into_view_if_needed()  # plotly.js loads there
    page.wait_for_selector('[data-chart="lag"][data-rendered="plot"] .main-svg')
    lags = page.evaluate(
        """() => document.querySelector('[data-chart="lag"]').data
                 .flatMap(trace => Array.from(trace.y))"""
    )
    assert max(lags) == 12
    assert 3 in lags
    assert page.locator('[data-chart="lag"] .scatterlayer .trace').count() >= 1
    shot(page, artifacts_dir, "overview", "topic-chart")


# --- 3. pending ------------------------------------------------------------------------------


def test_journey_pending_sort_and_open_entry(
    login, live_server, fast_console, r, mq_config, artifacts_dir
) -> None:
    Topics(mq_config).create("jobs", 2, groups=["workers"])
    producer = Producer(mq_config)
    hostile = '<img src=x onerror="window.__xss=1"> {"job": 7}'
    for i, payload in enumerate(["resize 1", "resize 2", hostile]):
        producer.send("jobs", payload, key=f"k{i}", partition=0)
    producer.send("jobs", json.dumps({"job": 9, "kind": "thumbnail"}), partition=1)
    ids0 = pend(
        r, mq_config, "jobs", "workers", 0, "worker-a", [(50_000, 1), (10_000, 9), (90_000, 2)]
    )
    ids1 = pend(r, mq_config, "jobs", "workers", 1, "worker-b", [(70_000, 4)])
    collect()
    page = login(*make_user("opal", "Operator"))
    page.on("dialog", lambda dialog: pytest.fail(f"unexpected dialog: {dialog.message}"))
    page.goto(f"{live_server.url}{CLUSTER}/topics/jobs/pending/?group=workers")
    ids = page.locator("#pending-table tbody tr th code")
    assert ids.all_inner_texts() == [ids0[2], ids1[0], ids0[0], ids0[1]]  # idle, longest first
    assert "Scanned 4 entries" in page.inner_text("[data-scan]")
    shot(page, artifacts_dir, "pending", "by-idle")

    page.select_option("#pf-sort", "count")
    page.get_by_role("button", name="Apply").click()
    page.wait_for_url("**sort=count**")
    assert ids.all_inner_texts() == [ids0[1], ids1[0], ids0[2], ids0[0]]  # most deliveries first
    poison = sum(n >= poison_threshold() for n in (1, 9, 2, 4))
    assert page.locator("#pending-table tr.poison").count() == poison
    page.select_option('select[name="order"]', "asc")
    page.get_by_role("button", name="Apply").click()
    page.wait_for_url("**order=asc**")
    assert ids.all_inner_texts() == [ids0[0], ids0[2], ids1[0], ids0[1]]
    shot(page, artifacts_dir, "pending", "by-count")

    # ids are per partition: two partitions may hold the same id, so pick partition 0
    page.locator(f'#pending-table a[href*="/messages/0/{ids0[2]}/"]').click()
    page.wait_for_url(f"**/messages/0/{ids0[2]}/**")
    payload = page.locator("#payload")
    assert payload.inner_text().strip() == hostile  # shown as text, escaped
    assert payload.locator("img").count() == 0
    assert page.evaluate("window.__xss") is None
    expect(page.locator("dl.facts")).to_contain_text("k2")
    shot(page, artifacts_dir, "pending", "entry")


# --- 4. dead letters ---------------------------------------------------------------------------


def replay_worker(job_id: str) -> threading.Thread:
    """The Celery worker's part (as test_dlq_journeys.py does): run here to share the test DB."""

    def work() -> None:
        try:
            replay_job_run(job_id=job_id)
        finally:
            connections.close_all()

    thread = threading.Thread(target=work, name="replay-worker")
    thread.start()
    return thread


def test_journey_dead_letters_filter_replay_audit_bulk(
    login, live_server, fast_console, r, mq_config, consumers, artifacts_dir
) -> None:
    Topics(mq_config).create("payments", 2, groups=["billing"])
    producer = Producer(mq_config)
    for i in range(10):
        reason = "card declined" if i % 5 else "address invalid"
        body = {"payment": i, "amount": 10 + i, "error": reason}
        producer.send("payments", json.dumps(body), key=f"cust-{i % 3}")

    def handler(message: Message) -> Outcome:
        return Outcome.FAIL  # every payment bounces: straight to the DLQ

    run_consumer(mq_config, consumers, "payments", "billing-1", handler)
    dlq = DeadLetters(mq_config)
    wait_until(lambda: dlq.depth("payments") == 10, "10 dead letters")
    consumers.pop().stop(timeout=10)
    collect()
    who = make_user("oscar", "Operator")
    page = login(*who)
    page.goto(f"{live_server.url}{CLUSTER}/topics/payments/dlq/")
    assert page.locator("#dlq-table tbody tr").count() == 10
    page.fill("#f-text", "declined")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url("**text=declined**")
    rows = page.locator("#dlq-table tbody tr")
    expect(rows).to_have_count(8)
    shot(page, artifacts_dir, "dlq", "filtered")

    first = rows.first.get_attribute("id").removeprefix("letter-")
    rows.first.locator("td a").first.click()
    page.wait_for_url(f"**/dlq/{first}/")
    expect(page.locator("pre.payload")).to_contain_text('"error": "card declined"')
    expect(page.locator("#replays-table")).to_contain_text("Never replayed")
    questions: list[str] = []

    def answer(accept: bool) -> Callable[[Any], None]:
        def on_dialog(dialog: Any) -> None:
            questions.append(dialog.message)
            dialog.accept() if accept else dialog.dismiss()

        return on_dialog

    page.once("dialog", answer(False))  # a second thought: nothing happens
    page.fill("#r-reason", "INC-42 card processor back")
    page.click("#replay-button")
    assert questions == [f"Replay letter {first}?"]
    assert dlq.replays("payments", first) == []
    page.once("dialog", answer(True))
    page.click("#replay-button")
    page.wait_for_load_state("networkidle")
    expect(page.locator(".messages")).to_contain_text(f"Replayed {first}")
    expect(page.locator("#replays-table tbody")).to_contain_text("oscar")
    assert len(dlq.replays("payments", first)) == 1
    page.locator("#replays-table").scroll_into_view_if_needed()
    shot(page, artifacts_dir, "dlq", "letter-replayed")

    page.goto(f"{live_server.url}/audit/")
    row = page.locator("#audit-table tbody tr").first
    assert row.get_attribute("data-action") == "dlq.replay"
    assert row.get_attribute("data-outcome") == "replayed"
    expect(row).to_contain_text("oscar")
    expect(row).to_contain_text(first)
    expect(row).to_contain_text("INC-42 card processor back")

    page.goto(f"{live_server.url}{CLUSTER}/topics/payments/dlq/?text=declined")
    page.click("#replay-all")
    page.wait_for_selector("#frozen-set")
    assert "8 letters" in page.inner_text("#frozen-set")
    assert "text=declined" in page.inner_text("main")
    assert page.locator("#plan-table tbody tr").count() == 8
    shot(page, artifacts_dir, "dlq", "bulk-preview")
    page.fill("#b-reason", "INC-42 replay the declined payments")
    page.fill("#b-rate", "4")  # 4 letters/s: two chunks, progress visible in between
    page.once("dialog", answer(True))
    page.click("#start-job")
    page.wait_for_selector("#job-progress")
    assert questions[-1] == "Replay 8 letters?"
    job = ReplayJob.objects.get(status=ReplayJobStatus.QUEUED)
    worker = replay_worker(str(job.pk))
    progress = page.locator("#job-progress")
    expect(progress).to_have_attribute("data-status", "completed", timeout=20_000)
    worker.join(timeout=10)
    assert page.inner_text('[data-count="replayed"]') == "7"
    assert page.inner_text('[data-count="skipped"]') == "1"  # the one replayed by hand
    assert page.inner_text('[data-count="failed"]') == "0"
    assert page.get_attribute("#job-progress progress", "value") == "8"
    assert "(100%)" in page.inner_text("#job-progress")
    shot(page, artifacts_dir, "dlq", "bulk-done")

    page.goto(f"{live_server.url}/audit/?action=dlq.bulk_replay")
    bulk = page.locator("#audit-table tbody tr").first
    expect(bulk).to_contain_text("replayed=7")
    expect(bulk).to_contain_text("skipped=1")


# --- 5. leases and rebalance ---------------------------------------------------------------------


def test_journey_leases_move_when_a_consumer_stops(
    login, live_server, fast_console, mq_config, consumers, artifacts_dir
) -> None:
    Topics(mq_config).create("orders", 4, groups=["billing"])
    producer = Producer(mq_config)
    for i in range(8):
        producer.send("orders", json.dumps({"order": i}), key=f"c{i}")
    collect()  # before anyone consumes: every acquisition becomes a timeline event

    def handler(message: Message) -> Outcome:
        return Outcome.SUCCESS

    a = run_consumer(mq_config, consumers, "orders", "billing-a", handler)
    b = run_consumer(mq_config, consumers, "orders", "billing-b", handler)
    wait_until(
        lambda: len(a.owned_partitions()) == 2 and len(b.owned_partitions()) == 2,
        "two partitions each",
    )
    lost = a.owned_partitions()
    collect()
    page = login(*make_user("lena", "Viewer"))
    page.goto(f"{live_server.url}{CLUSTER}/topics/orders/leases/?group=billing")
    owners = page.locator("#leases-table tbody tr td:nth-child(3)")
    assert sorted(owners.all_inner_texts()) == ["billing-a"] * 2 + ["billing-b"] * 2
    expect(page.locator("#consumers-table")).to_contain_text("billing-a")
    shot(page, artifacts_dir, "leases", "two-owners")

    a.stop(timeout=10)  # graceful: releases its leases, the peer takes them
    wait_until(lambda: b.owned_partitions() == [0, 1, 2, 3], "billing-b owns all")
    collect()
    expect(owners).to_have_text(["billing-b"] * 4, timeout=10_000)  # live poll, no reload
    timeline = page.locator("#timeline-table tbody tr")
    for partition in lost:
        moved = timeline.filter(has_text="taken_over").filter(
            has=page.locator("td:nth-child(3)", has_text=str(partition))
        )
        expect(moved).to_have_count(1)
        expect(moved).to_contain_text("billing-a")  # the previous owner
    assert timeline.filter(has_text="acquired").count() >= 4
    held = page.locator("#consumers-table tbody tr", has=page.locator("th", has_text="billing-b"))
    expect(held).to_contain_text("4 (0, 1, 2, 3)")
    shot(page, artifacts_dir, "leases", "moved")


# --- 7. audit ------------------------------------------------------------------------------------


def test_journey_audit_filter_by_actor_and_export_csv(
    login, live_server, fast_console, r, mq_config, artifacts_dir
) -> None:
    Topics(mq_config).create("orders", 2, groups=["billing"])
    producer = Producer(mq_config)
    for i in range(4):
        producer.send("orders", json.dumps({"order": i}), key=f"k{i}")
    dead_letter_all(r, mq_config, "orders", "billing", 2)
    letters = [letter.id for letter in DeadLetters(mq_config).page("orders").letters]
    alice = User.objects.get(username=make_user("alice", "Operator")[0])
    bob = User.objects.get(username=make_user("bob", "Admin")[0])
    common = {"cluster": "default", "topic": "orders"}
    dlq_svc.dlq_replay(Actor(alice, **common), dlq_id=letters[0], reason="INC-7 retry")
    dlq_svc.dlq_replay(Actor(alice, **common), dlq_id=letters[1], reason="INC-7 retry")
    dlq_svc.dlq_delete(Actor(bob, **common), dlq_id=letters[2], reason="INC-8 junk")
    page = login(*make_user("carol", "Viewer"))
    page.goto(f"{live_server.url}/audit/")
    rows = page.locator("#audit-table tbody tr")
    assert rows.count() == 3
    page.fill("#a-actor", "alice")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url("**actor=alice**")
    expect(rows).to_have_count(2)
    for text in rows.all_inner_texts():
        assert "alice" in text
        assert "bob" not in text
    page.get_by_role("button", name="Check chain").click()
    expect(page.locator("#audit-chain")).to_have_attribute("data-chain", "intact")
    shot(page, artifacts_dir, "audit", "by-actor")

    with page.expect_download() as info:
        page.get_by_role("link", name="CSV").click()
    download = info.value
    assert download.suggested_filename == "audit.csv"
    lines = list(csv.DictReader(io.StringIO(Path(download.path()).read_text())))
    assert [line["actor"] for line in lines] == ["alice", "alice"]
    assert sorted(line["letter_ids"] for line in lines) == sorted(letters[:2])
    assert {line["reason"] for line in lines} == {"INC-7 retry"}


# --- 6. checkpoints ------------------------------------------------------------------------------


def test_journey_checkpoints_completed_failed_and_restore(
    login, live_server, fast_console, r, mq_config, artifacts_dir
) -> None:
    Topics(mq_config).create("orders", 2, groups=["order-totals"])
    producer = Producer(mq_config)
    sent = [producer.send("orders", json.dumps({"order": i}), partition=i % 2) for i in range(8)]
    by_part = {p: [s.id for s in sent if s.partition == p] for p in (0, 1)}
    store = CheckpointStore(mq_config)
    common = {"topic": "orders", "sink": "redis", "group": "order-totals"}
    t0 = int(time.time() * 1000) - 60_000

    # Run 1 commits batch 0 (two orders per partition), plans batch 1 and dies.
    run1, run2 = new_run_id(), new_run_id()
    store.record_planned("order_totals", 0, Writer(run_id=run1, **common), now_ms=t0)
    assert store.record_committed(
        "order_totals",
        0,
        Writer(run_id=run1, **common),
        records=4,
        acked_ids={"0": by_part[0][1], "1": by_part[1][1]},
        now_ms=t0 + 900,
    )
    store.record_progress(
        "order_totals", 0, durations={"addBatch": 610, "triggerExecution": 850}, trigger_at_ms=t0
    )
    store.record_planned("order_totals", 1, Writer(run_id=run1, **common), now_ms=t0 + 10_000)
    # Run 2 finds batch 1 planned but uncommitted: a restore, replayed and committed.
    outcome = store.record_restore("order_totals", 1, Writer(run_id=run2, **common))
    assert outcome == PlanOutcome.RESTORED
    assert store.record_committed(
        "order_totals",
        1,
        Writer(run_id=run2, **common),
        records=2,
        acked_ids={"0": by_part[0][2], "1": by_part[1][2]},
    )
    store.record_progress(
        "order_totals", 1, durations={"addBatch": 240, "triggerExecution": 420}, trigger_at_ms=t0
    )
    store.record_planned("order_totals", 2, Writer(run_id=run2, **common))
    store.record_failed("order_totals", 2, run_id=run2, reason="sink timeout: HSET took > 5 s")
    collect()

    page = login(*make_user("cora", "Viewer"))
    page.goto(f"{live_server.url}{CLUSTER}/")
    page.get_by_role("link", name="Pipelines").click()
    row = page.locator('#pipelines-table tr[data-pipeline="order_totals"]')
    expect(row).to_contain_text("orders")
    cells = row.locator("td.num").all_inner_texts()
    assert cells == ["3", "0", "2", "1", "1"]  # triggered, in progress, completed, failed, restored
    shot(page, artifacts_dir, "checkpoints", "list")

    row.get_by_role("link", name="order_totals").click()
    page.wait_for_url("**/pipelines/order_totals/")
    assert page.inner_text('[data-count="completed"]') == "2"
    assert page.inner_text('[data-count="restored"]') == "1"
    expect(page.locator("#card-completed")).to_contain_text("Batch 1")
    expect(page.locator("#card-failed")).to_contain_text("sink timeout: HSET took > 5 s")
    expect(page.locator("#card-restore")).to_contain_text("Batch 1")
    expect(page.locator("#card-restore")).to_contain_text(run1)  # restored from the dead run
    history = page.locator("#history-table tbody tr")
    assert [h.get_attribute("data-batch") for h in history.all()] == ["2", "1", "0"]
    assert [h.get_attribute("data-status") for h in history.all()] == [
        "failed",
        "completed",
        "completed",
    ]
    expect(history.nth(1)).to_contain_text("restored")
    gaps = page.locator("#partitions-table tbody tr td.num").all_inner_texts()
    assert gaps[0::2] == ["1", "1"]  # one order per partition after the last checkpoint
    assert history.nth(2).locator("td.num").first.inner_text() == "850 ms"
    shot(page, artifacts_dir, "checkpoints", "detail")
