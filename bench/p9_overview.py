"""P9: the overview page with 1,000 topics, server time, vs loading its snapshot from Redis.

Raw: ``ConsoleStore.snapshot_get`` (one GET + JSON decode of the whole cluster snapshot),
median of many runs. Ours: the full Django request for ``/clusters/bench/``
(session auth, selectors, sort, one page of 50 rows with sparklines from the
time series, template rendering), p95 over many runs, in-process through the
test client (no network). Also records the HTML size (budget: under 1 MB).

The snapshot has the exact shape the collectors store (``ClusterSnapshot`` +
enrichment): 1,000 topics x 4 partitions x 2 groups, one hour of lag samples
per topic.
"""

from __future__ import annotations

import os
import random
import statistics
import tempfile
import time
from typing import Any

import msgspec

from bench.common import BenchContext, Result
from mqcore.models import ClusterSnapshot

TOPICS = 1000
PARTS = 4
GROUPS = ("billing", "audit")
SAMPLES = 60  # one hour at a 60 s cadence
CLUSTER = "bench"


def _snapshot(now_ms: int, topics: int) -> ClusterSnapshot:
    from mqcore.models import (
        ConsumerInfo,
        GroupLag,
        LeaseInfo,
        PartitionLag,
        RetryBacklog,
        TopicSnapshot,
    )

    rng = random.Random(9)
    out: list[TopicSnapshot] = []
    for i in range(topics):
        name = f"topic-{i:04d}"
        groups = []
        for g in GROUPS:
            parts = [
                PartitionLag(p, f"{now_ms - 5000}-{p}", rng.randint(0, 500), rng.randint(0, 90_000),
                             rng.randint(0, 20), True, length=10_000, last_id=f"{now_ms}-0")
                for p in range(PARTS)
            ]  # fmt: skip
            groups.append(
                GroupLag(g, sum(p.lag or 0 for p in parts), max(p.lag_ms or 0 for p in parts),
                         sum(p.pending for p in parts), True, parts)
            )  # fmt: skip
        leases = [LeaseInfo(g, p, f"c-{p % 2}", 25_000, 3) for g in GROUPS for p in range(PARTS)]
        consumers = [ConsumerInfo(g, f"c-{k}", 3, 100, 1000, [k, k + 2], 4) for g in GROUPS
                     for k in range(2)]  # fmt: skip
        out.append(
            TopicSnapshot(name, PARTS, 40_000, rng.randint(0, 50), RetryBacklog(2, now_ms, now_ms),
                          groups, leases, consumers, [10_000] * PARTS, [f"{now_ms}-0"] * PARTS)
        )  # fmt: skip
    snap: dict[str, Any] = msgspec.to_builtins(ClusterSnapshot(now_ms, out, "runid", 120.0, 50))
    statuses = ("OK", "OK", "OK", "WARN", "STALL", "UNKNOWN")
    snap["cluster"] = CLUSTER
    for t in snap["topics"]:
        status = rng.choice(statuses)
        groups = t["groups"]
        t.update(
            lag=sum(g["lag"] for g in groups),
            lag_ms=max(g["lag_ms"] for g in groups),
            pending=sum(g["pending"] for g in groups),
            oldest_pending_ms=30_000,
            dlq_growth=rng.randint(0, 2),
            status=status,
            status_reason=f"rule {status}",
        )
        for g in t["groups"]:
            g.update(status=status, status_reason="")
            for p in g["partitions"]:
                p.update(status=status, status_reason="")
    return msgspec.convert(snap, ClusterSnapshot)


def _setup_django(console_url: str, mq_url: str, tmp: str) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{tmp}/p9.sqlite3")
    import django
    from django.conf import settings

    django.setup()
    settings.MQ_CLUSTERS = {CLUSTER: {"url": mq_url}}
    settings.CONSOLE_REDIS_URL = console_url
    settings.ALLOWED_HOSTS = ["testserver", *settings.ALLOWED_HOSTS]
    settings.DATABASES["default"]["NAME"] = f"{tmp}/p9.sqlite3"
    from django.db import connections

    connections.close_all()
    from dashboard.clusters import reset_caches

    reset_caches()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def run(ctx: BenchContext) -> list[Result]:
    topics = ctx.n(TOPICS, minimum=100)
    runs = 30 if not ctx.quick else 10
    with ctx.fresh_redis("mq+store") as (server, _client, _), tempfile.TemporaryDirectory() as tmp:
        base = f"redis://{server.host}:{server.port}"
        _setup_django(f"{base}/1", f"{base}/0", tmp)
        from django.contrib.auth.models import Group, User
        from django.test import Client

        from dashboard.clusters import console_store
        from dashboard.permissions import roles_sync

        now = int(time.time() * 1000)
        snap = _snapshot(now, topics)
        writer = console_store()
        for k in range(SAMPLES):
            at = now - (SAMPLES - k) * 60_000
            points = [("lag", f"topic-{i:04d}", float((i + k) % 50)) for i in range(topics)]
            _write(writer, None, points, at)
        _write(writer, snap, [], now)

        ctx.measuring()
        roles_sync()
        user = User.objects.create_user("p9", password="p9-bench-pass")
        user.groups.add(Group.objects.get(name="Viewer"))
        http = Client()
        http.force_login(user)

        from dashboard.clusters import console_keys
        from dashboard.store.keys import loads

        snapshot_key = console_keys().snapshot(CLUSTER)

        def load() -> float:  # GET + decode, as every request paid before the version cache
            start = time.perf_counter()
            assert loads(writer.r.get(snapshot_key)) is not None
            return (time.perf_counter() - start) * 1000

        html_bytes = 0

        def page() -> float:
            nonlocal html_bytes
            start = time.perf_counter()
            response = http.get(f"/clusters/{CLUSTER}/")
            ms = (time.perf_counter() - start) * 1000
            assert response.status_code == 200, response.status_code
            html_bytes = len(response.content)
            return ms

        load(), page()  # warm caches (templates, connections, script loads)
        raw = [load() for _ in range(runs)]
        ours = [page() for _ in range(runs)]
        raw_ms = statistics.median(raw)
        ours_p95 = _p95(ours)
    return [
        Result(
            "P9",
            f"overview page, {topics} topics (p95 server ms vs snapshot load)",
            ours_p95,
            raw_ms,
            "ms",
            "<= 10x",
            {
                "page_median_ms": round(statistics.median(ours), 2),
                "topics": topics,
                "html_bytes": html_bytes,
                "runs": runs,
            },
        ),
        Result(
            "P9.html", "overview HTML size vs 1 MB", html_bytes / 1024, 1024.0, "KiB", "<= 1.0x"
        ),
    ]


def _write(writer: Any, snapshot: ClusterSnapshot | None, points: list[Any], at: int) -> None:
    writer.pass_write(
        CLUSTER, now_ms=at, snapshot=snapshot, state={}, lease_state=None, incidents=[],
        points={"raw": points}, health={"ok": True}, alerts_open={}, alerts_resolved=[], slot=None,
    )  # fmt: skip
