"""P8.bulk: a bulk replay job (frozen set, progress commits, lease) without a rate limit.

Raw: the ``replay_letters`` script called directly, 100 ids per call, on its own
fresh letters. Ours: ``services.replay_runner.replay_job_run`` on a started job of the same
size (what the Celery task runs): frozen set from SQL, ``replay_many`` Lua
batches, an exact progress commit every 1,000 letters, final audit row.
Budgets: >= 0.7x raw, and >= 20,000 letters/s absolute.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
import uuid

from bench.common import BenchContext, Result

PARTS = 4
ABSOLUTE_BUDGET = 20_000


def _setup_django(mq_url: str, console_url: str, tmp: str) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{tmp}/p8b.sqlite3")
    import django
    from django.conf import settings

    django.setup()
    settings.MQ_CLUSTERS = {"bench": {"url": mq_url, "socket_timeout": 30}}
    settings.CONSOLE_REDIS_URL = console_url
    settings.DATABASES["default"]["NAME"] = f"{tmp}/p8b.sqlite3"
    from django.db import connections

    connections.close_all()
    from dashboard.clusters import reset_caches

    reset_caches()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)


def _letters(client, keys, topic: str, count: int) -> list[str]:  # type: ignore[no-untyped-def]
    headers = json.dumps({"partitionId": "1", "key": "k"})
    ids: list[str] = []
    for start in range(0, count, 1000):
        pipe = client.pipeline(transaction=False)
        for i in range(start, min(count, start + 1000)):
            pipe.xadd(keys.dlq(topic), {"originalTopic": topic, "payload": f"p{i}",
                                        "partitionId": 1, "headers": headers,
                                        "retryCount": 3, "maxRetries": 3})  # fmt: skip
        ids.extend(x.decode() for x in pipe.execute())
    return ids


def run(ctx: BenchContext) -> list[Result]:
    n = ctx.n(100_000, 5_000)
    with (
        ctx.fresh_redis("mq+store") as (server, client, config),
        tempfile.TemporaryDirectory() as tmp,
    ):
        keys = config.keys
        for topic in ("raw", "ours"):
            client.sadd(keys.registry(), topic)
            client.hset(keys.meta(topic), "partitionCount", PARTS)
        raw_ids = _letters(client, keys, "raw", n)
        ours_ids = _letters(client, keys, "ours", n)
        ctx.measuring()
        base = f"redis://{server.host}:{server.port}"
        _setup_django(f"{base}/0", f"{base}/1", tmp)

        from mqcore.scripts import lua_source

        script = client.register_script(lua_source("replay_letters"))
        script_keys = [keys.dlq("raw"), keys.dlq_replays("raw"), keys.meta("raw"),
                       keys.payload_index("raw"),
                       *(keys.partition("raw", p) for p in range(PARTS))]  # fmt: skip
        prefix = keys.payload_topic_prefix("raw")
        with ctx.unwatched():  # the baseline's 100-letter calls are not ours to bound
            start = time.perf_counter()
            for i in range(0, n, 100):
                now = int(time.time() * 1000)
                script(
                    keys=script_keys,
                    args=[now, "2024-01-01T00:00:00.000Z", "bench", "0", "raw", -1, "0", "{}",
                          prefix, prefix, uuid.uuid4().hex, *raw_ids[i : i + 100]],
                )  # fmt: skip
            raw_rate = n / (time.perf_counter() - start)
        # the baseline must replay every letter (a script layout it does not follow writes nothing)
        assert sum(client.xlen(keys.partition("raw", p)) for p in range(PARTS)) == n

        from django.contrib.auth.models import User

        from dashboard.models import ReplayJob, ReplayJobStatus
        from dashboard.services.replay_runner import replay_job_run

        user, _ = User.objects.get_or_create(username="bench")
        text = "\n".join(ours_ids)
        job = ReplayJob.objects.create(
            cluster="bench",
            topic="ours",
            created_by=user,
            reason="bench",
            frozen_ids=text,
            frozen_hash=hashlib.sha256(text.encode()).hexdigest(),
            total=n,
            first_id=ours_ids[0],
            last_id=ours_ids[-1],
            status=ReplayJobStatus.QUEUED,
        )
        start = time.perf_counter()
        done = replay_job_run(job_id=str(job.pk))
        ours_rate = n / (time.perf_counter() - start)
        assert done is not None
        assert (done.status, done.replayed, done.cursor) == ("completed", n, n), done
        assert int(client.xlen(keys.partition("ours", 1))) == n
        print(
            f"   P8.bulk: bulk replay job {ours_rate:,.0f} letters/s "
            f"(raw Lua batched {raw_rate:,.0f}/s; absolute budget >= {ABSOLUTE_BUDGET:,}/s: "
            f"{'PASS' if ours_rate >= ABSOLUTE_BUDGET else 'FAIL'})",
            flush=True,
        )
        return [
            Result(
                "P8.bulk",
                f"bulk replay job, {n:,} letters, no rate limit",
                ours_rate,
                raw_rate,
                "msg/s",
                ">= 0.7x",
                extra={
                    "letters_per_s": round(ours_rate),
                    "absolute_budget": f">= {ABSOLUTE_BUDGET}/s",
                    "absolute_pass": ours_rate >= ABSOLUTE_BUDGET,
                },
            )
        ]
