"""P4: one collector pass over 4,000 partitions (1,000 topics x 4) vs the raw pipelined prototype.

Ours = ``dashboard.collectors.passes.collect_cluster``: ``Admin.snapshot`` + status
enrichment + the console-store write (to a second fresh redis-server, so the MQ
server's Redis time is the collector's alone). Raw = the plain pipelined
prototype: per partition XINFO GROUPS, XLEN, XPENDING - + 1, lease GET; per
topic DLQ XLEN; pipelined 500. Both run interleaved on the same data.
Also reported: MQ Redis time per pass (budget <= 25 ms), the snapshot alone, a
"cold" pass (nothing reusable from the previous pass: every partition changed),
and the console store's bytes per series per tier. ``P4.once`` is what ``manage.py
collect --once`` does: a fresh process's first pass (the command's own "collected
in N ms", start-up excluded), whose peak RSS is the collecting worker's memory.
Rows measured on a first pass (``.once``, ``.cold``) are the median of ``FIRST_PASSES``
such passes: one pass is one sample, and this machine's speed varies by half from one
second to the next. Each ``.once`` process starts on an empty console store, as the
first one does, and a raw pass is timed right after each: ``.once`` is their medians.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import BenchContext, Result, elapsed_ms, redis_time_ms
from scripts.embedded import SENTINEL_SERVICE, SentinelProcess

GROUP = "default-group"
FIRST_PASSES = 5  # fresh processes (P4.once) and cold passes (P4.cold) measured, median


def _django(mq_url: str, store_url: str) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")
    import django
    from django.conf import settings

    django.setup()  # idempotent; settings below override whatever the env said
    settings.MQ_CLUSTERS = {"bench": {"url": mq_url, "socket_timeout": 30}}
    settings.CONSOLE_REDIS_URL = store_url
    settings.COLLECT_INTERVAL_S = 10
    from dashboard.clusters import reset_caches

    reset_caches()


def _populate(client: Any, config: Any, topics: int, partitions: int) -> None:
    from mqcore.topics import Topics

    admin_topics = Topics(config, client)
    keys = config.keys
    for t in range(topics):
        admin_topics.create(f"t{t:05d}", partitions)
    pipe = client.pipeline(transaction=False)
    now_ms = int(time.time() * 1000)
    for t in range(topics):
        name = f"t{t:05d}"
        for p in range(partitions):
            stream = keys.partition(name, p)
            for i in range(10):
                pipe.xadd(stream, {"payload": f"m{i}", "topic": name, "partitionId": str(p)})
            if p % 2 == 0:
                pipe.set(keys.lease(name, GROUP, p), f"consumer-{t % 7}", px=600_000)
            if len(pipe) >= 2000:
                pipe.execute()
        if t % 10 == 0:
            pipe.xadd(keys.dlq(name), {"payload": "dead", "failedAt": str(now_ms)})
    pipe.execute()
    for t in range(topics):
        name = f"t{t:05d}"
        for p in range(partitions):
            pipe.xreadgroup(GROUP, "consumer-0", {keys.partition(name, p): ">"}, count=4)
            if len(pipe) >= 2000:
                pipe.execute()
    pipe.execute()


# Peak RSS from VmHWM (this process image's own high-water mark): ru_maxrss would carry
# the forking bench process's size across exec.
_ONCE = """
from pathlib import Path
from django.core.management import execute_from_command_line
execute_from_command_line(["manage.py", "collect", "--once", "--cluster", "bench"])
status = Path("/proc/self/status").read_text().splitlines()
print("peak_rss_kb", next(line.split()[1] for line in status if line.startswith("VmHWM:")))
"""


def fresh_process_pass(mq_url: str, store_url: str) -> tuple[float, float]:
    """(first pass ms, peak RSS MiB) of ``manage.py collect --once`` in a new process."""
    root = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory(prefix="bench-once-") as tmp:
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings.test",
            "DATABASE_URL": f"sqlite:///{tmp}/once.sqlite3",
            "MQ_CLUSTERS": f'{{"bench": {{"url": "{mq_url}", "socket_timeout": 30}}}}',
            "CONSOLE_REDIS_URL": store_url,
            "PYTHONPATH": str(root),
        }
        done = subprocess.run(
            [sys.executable, "-c", _ONCE],
            cwd=root, env=env, capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
    passed = re.search(r"collected bench in (\d+) ms", done.stdout)
    rss = re.search(r"peak_rss_kb (\d+)", done.stdout)
    if passed is None or rss is None:
        raise RuntimeError(f"collect --once failed: {done.stdout[-500:]} {done.stderr[-2000:]}")
    return float(passed.group(1)), int(rss.group(1)) / 1024


_RAW_ONCE = """
import sys
from pathlib import Path
import redis
from bench.p4_collect import _raw_pass
from mqcore.config import MQConfig
url, topics, partitions = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
config = MQConfig.from_url(url, socket_timeout=30)
client = redis.Redis.from_url(url, socket_timeout=30)
_raw_pass(client, config, sorted(f"t{t:05d}" for t in range(topics)), partitions)
status = Path("/proc/self/status").read_text().splitlines()
print("peak_rss_kb", next(line.split()[1] for line in status if line.startswith("VmHWM:")))
"""


def raw_process_rss(mq_url: str, topics: int, partitions: int) -> float:
    """Peak RSS MiB of a new process that runs the raw prototype's pass once (the
    ``P12.rss`` row's point of comparison: what reading the same replies costs at least)."""
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, "-c", _RAW_ONCE, mq_url, str(topics), str(partitions)],
        cwd=root, env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    rss = re.search(r"peak_rss_kb (\d+)", done.stdout)
    if rss is None:
        raise RuntimeError(f"raw pass failed: {done.stdout[-500:]} {done.stderr[-2000:]}")
    return int(rss.group(1)) / 1024


def _raw_pass(client: Any, config: Any, topics: list[str], partitions: int) -> None:
    keys = config.keys
    pipe = client.pipeline(transaction=False)
    for name in topics:
        pipe.xlen(keys.dlq(name))
        for p in range(partitions):
            stream = keys.partition(name, p)
            pipe.xinfo_groups(stream)
            pipe.xlen(stream)
            pipe.xpending_range(stream, GROUP, "-", "+", 1)
            pipe.get(keys.lease(name, GROUP, p))
            if len(pipe) >= 500:
                pipe.execute()
    pipe.execute()


def run_collect(
    ctx: BenchContext,
    *,
    bench_id: str,
    topics_full: int,
    partitions: int,
    budget: str,
    repeats: int = 5,
    once_budget: str | None = None,
) -> list[Result]:
    topics_n = ctx.n(topics_full, minimum=20)
    with (
        ctx.fresh_redis() as (server, client, config),
        ctx.fresh_redis("store") as (store_srv, store_client, _),
    ):
        started = time.perf_counter()
        _populate(client, config, topics_n, partitions)
        populate_s = time.perf_counter() - started
        ctx.measuring()
        store_url = f"redis://{store_srv.host}:{store_srv.port}/0"
        names = sorted(f"t{t:05d}" for t in range(topics_n))
        once_ms, once_raw, rss_mib, raw_rss = [], [], 0.0, 0.0
        for _ in range(FIRST_PASSES if once_budget is not None else 1):
            store_client.flushall()  # each first pass starts on an empty store
            ms, rss = fresh_process_pass(server.url, store_url)
            once_ms.append(ms)
            rss_mib = max(rss_mib, rss)
            # raw beside each fresh process: the machine's speed drifts over a run
            once_raw.append(elapsed_ms(lambda: _raw_pass(client, config, names, partitions)))
        if once_budget is not None:
            raw_rss = raw_process_rss(server.url, topics_n, partitions)
        _django(server.url, store_url)
        from django.conf import settings

        from dashboard.clusters import admin, console_keys, console_redis
        from dashboard.collectors.passes import collect_cluster
        from dashboard.store import POINT, ConsoleStore, series_bytes, tiers

        store = ConsoleStore(console_redis(), console_keys())
        collect_cluster("bench", claim=False, store=store)  # warm-up: scripts, caches
        ours, raw, snap_only, redis_ms, store_ms = [], [], [], [], []
        for _ in range(repeats):
            raw.append(elapsed_ms(lambda: _raw_pass(client, config, names, partitions)))
            wall, mq_ms = redis_time_ms(
                client, lambda: collect_cluster("bench", claim=False, store=store)
            )
            ours.append(wall)
            redis_ms.append(mq_ms)
            _w, st_ms = redis_time_ms(
                console_redis(), lambda: collect_cluster("bench", claim=False, store=store)
            )
            store_ms.append(st_ms)
            snap_only.append(elapsed_ms(lambda: admin("bench").snapshot(batch=500, last_ids=False)))
        _w, raw_redis = redis_time_ms(client, lambda: _raw_pass(client, config, names, partitions))
        # transparency: a pass that cannot reuse anything from the previous one
        # (every partition changed: the snapshot's per-partition cache is cleared)
        from mqcore.snapshot import plan as mq_snapshot

        cold_wall, cold_redis = [], []
        for _ in range(FIRST_PASSES):
            mq_snapshot._CACHE.clear()
            wall, mq_ms = redis_time_ms(
                client, lambda: collect_cluster("bench", claim=False, store=store)
            )
            cold_wall.append(wall)
            cold_redis.append(mq_ms)
        sentinel_ms, direct_ms = (
            _through_sentinel(server, store, repeats) if bench_id == "P4" else ([], [])
        )
        key = console_keys().series("bench", "raw", "lag", names[0])
        per_point = int(console_redis().memory_usage(key) or 0) / max(
            1, int(console_redis().strlen(key)) // POINT.size
        )
        series = int(console_redis().zcard(console_keys().series_index("bench")))
        interval = int(settings.COLLECT_INTERVAL_S)
        gauge_bytes = series_bytes(tiers(), interval, "lag")
        counter_bytes = series_bytes(tiers(), interval, "produced_total")
    parts = topics_n * partitions
    med = statistics.median
    extra = {
        "partitions": parts,
        "populate_s": round(populate_s, 1),
        "fresh_process_first_pass_ms": sorted(once_ms),
        "collect_once_peak_rss_mib": round(rss_mib, 1),
        "snapshot_only_ms": round(med(snap_only), 1),
        "mq_redis_ms_per_pass": round(med(redis_ms), 2),
        "raw_redis_ms_per_pass": round(raw_redis, 2),
        "store_redis_ms_per_pass": round(med(store_ms), 2),
        "cold_pass_ms": sorted(round(x, 1) for x in cold_wall),
        "cold_pass_mq_redis_ms": sorted(round(x, 2) for x in cold_redis),
        "series": series,
        "series_bytes_per_point_stored": round(per_point, 1),
        "series_bytes_gauge_per_tier": gauge_bytes,
        "series_bytes_counter_per_tier": counter_bytes,
        "series_bytes_per_day_raw_gauge": 86400 // interval * POINT.size,
    }
    results = [
        Result(
            id=bench_id,
            what=f"collector pass, {parts} partitions (snapshot+status+store)",
            ours=med(ours),
            raw=med(raw),
            unit="ms",
            budget=budget,
            extra=extra,
        )
    ]
    if bench_id == "P4":
        results.append(
            Result(
                id="P4.sentinel",
                what=f"collector pass, {parts} partitions, through Sentinel vs direct",
                ours=med(sentinel_ms),
                raw=med(direct_ms),
                unit="ms",
                budget="<= 1.1x",
            )
        )
    if once_budget is not None:
        results.append(
            Result(
                id=f"{bench_id}.once",
                what=f"collect --once: a fresh process's first pass, {parts} partitions",
                ours=med(once_ms),
                raw=med(once_raw),
                unit="ms",
                budget=once_budget,
                extra={
                    "peak_rss_mib": round(rss_mib, 1),
                    "raw_prototype_process_peak_rss_mib": round(raw_rss, 1),
                },
            )
        )
    if bench_id == "P4":
        results.append(
            Result(
                id="P4.redis",
                what=f"MQ Redis time per collector pass, {parts} partitions (vs 25 ms)",
                ours=med(redis_ms),
                raw=25.0,
                unit="ms",
                budget="<= 1.0x",
                extra={"raw_prototype_redis_ms": round(raw_redis, 2)},
            ),
        )
        # A busy deployment changes every partition between passes: report that case too.
        results.append(
            Result(
                id="P4.cold",
                what=f"collector pass, {parts} partitions, every partition changed",
                ours=med(cold_wall),
                raw=med(raw),
                unit="ms",
                budget="<= 1.5x",
            )
        )
        results.append(
            Result(
                id="P4.redis.cold",
                what="MQ Redis time per pass, every partition changed (vs 25 ms)",
                ours=med(cold_redis),
                raw=25.0,
                unit="ms",
                budget="<= 1.0x",
                extra={"raw_prototype_redis_ms": round(raw_redis, 2)},
            )
        )
    return results


def _through_sentinel(server: Any, store: Any, repeats: int) -> tuple[list[float], list[float]]:
    """The same pass with the cluster named by a Sentinel URL (one Sentinel watching the
    bench's Redis) and by its direct URL, interleaved: (through Sentinel, direct) ms."""
    from django.conf import settings

    from dashboard.clusters import reset_caches
    from dashboard.collectors.passes import collect_cluster

    with (
        tempfile.TemporaryDirectory(prefix="bench-sentinel-") as tmp,
        SentinelProcess(Path(tmp), server) as sentinel,
    ):
        url = f"redis+sentinel://{sentinel.host}:{sentinel.port}/{SENTINEL_SERVICE}/0"
        clusters = settings.MQ_CLUSTERS
        settings.MQ_CLUSTERS = {**clusters, "sentinel": {"url": url, "socket_timeout": 30}}
        reset_caches()

        def one(name: str) -> float:
            return elapsed_ms(lambda: collect_cluster(name, claim=False, store=store))

        one("bench")  # warm-up: scripts, caches
        one("sentinel")
        through, direct = [], []
        for _ in range(max(repeats, 7)):
            direct.append(one("bench"))
            through.append(one("sentinel"))
        settings.MQ_CLUSTERS = clusters
        reset_caches()
    return through, direct


def run(ctx: BenchContext) -> list[Result]:
    return run_collect(
        ctx, bench_id="P4", topics_full=1000, partitions=4, budget="<= 1.3x", once_budget="<= 1.5x"
    )
