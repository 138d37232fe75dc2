"""Load test: 50 concurrent users against gunicorn with production settings (``make loadtest``).

Sets up what a production deployment has: ``config.settings.prod`` (DEBUG off,
WhiteNoise with compressed, hashed static files and long cache headers), gunicorn
with the workers docker-compose runs, a fresh redis-server for the MQ and the
console store, and a snapshot of 1,000 topics (4 partitions, 2 groups each) with
an hour of lag samples, as the collectors store it. Then wrk (Debian's package)
drives each page with 50 connections, each one a user who loads the page and
waits 1-5 s before the next load (an open page polls every collect interval, 10 s
by default, so this is busier than 50 SREs watching). Prints p50/p95/p99 and the
error count per page. Not a test: nothing asserts a time.

    python -m bench.loadtest [--users 50] [--seconds 30] [--workers 3] [--topics 1000]
                             [--think-ms 1000-5000]
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CLUSTER = "bench"
PAGES = {
    "overview": f"/clusters/{CLUSTER}/",
    "topic": f"/clusters/{CLUSTER}/topics/topic-0001/",
}
WRK_SCRIPT = """
local path = os.getenv("LOADTEST_PATH")
local cookie = os.getenv("LOADTEST_COOKIE")
math.randomseed(os.time())
request = function()
  return wrk.format("GET", path, {["Cookie"] = cookie, ["X-Forwarded-Proto"] = "https"})
end
local lo, hi = string.match(os.getenv("LOADTEST_THINK_MS"), "(%d+)-(%d+)")
delay = function() return math.random(tonumber(lo), tonumber(hi)) end
done = function(summary, latency, requests)
  io.write(string.format("RESULT p50=%.1f p95=%.1f p99=%.1f max=%.1f requests=%d "
    .. "non2xx=%d errors=%d\\n",
    latency:percentile(50) / 1000, latency:percentile(95) / 1000,
    latency:percentile(99) / 1000, latency.max / 1000, summary.requests,
    summary.errors.status, summary.errors.connect + summary.errors.read
    + summary.errors.write + summary.errors.timeout))
end
"""


def _env(tmp: Path, redis_url: str) -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.prod",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "SECURE_SSL_REDIRECT": "0",
        "SECURE_HSTS_SECONDS": "0",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "OPSDASH_VAR_DIR": str(tmp),
        "DATABASE_URL": f"sqlite:///{tmp}/loadtest.sqlite3",
        "MQ_CLUSTERS": f'{{"{CLUSTER}": {{"url": "{redis_url}/0"}}}}',
        "CONSOLE_REDIS_URL": f"{redis_url}/1",
        "CELERY_BROKER_URL": f"{redis_url}/2",
        "METRICS_BEARER_TOKEN": secrets.token_urlsafe(20),
        "METRICS_PUBLIC": "0",
        "LOG_LEVEL": "WARNING",
        "PYTHONPATH": str(ROOT),
    }


def _prepare(topics: int) -> str:
    """In this process (production settings from the environment): migrate, collect static
    files, store the snapshot and series, and return a logged-in Viewer's session cookie."""
    import django

    django.setup()
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command
    from django.test import Client

    from bench.p9_overview import SAMPLES, _snapshot, _write
    from dashboard.clusters import console_store
    from dashboard.permissions import roles_sync

    call_command("migrate", verbosity=0, interactive=False)
    call_command("collectstatic", verbosity=0, interactive=False)
    now = int(time.time() * 1000)
    writer = console_store()
    for k in range(SAMPLES):
        at = now - (SAMPLES - k) * 60_000
        points = [("lag", f"topic-{i:04d}", float((i + k) % 50)) for i in range(topics)]
        _write(writer, None, points, at)
    _write(writer, _snapshot(now, topics), [], now)
    roles_sync()
    user = User.objects.create_user("loadtest", password=secrets.token_urlsafe(16))
    user.groups.add(Group.objects.get(name="Viewer"))
    client = Client(secure=True)
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}"


def _wait_http(url: str, cookie: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    request = urllib.request.Request(url, headers={"Cookie": cookie, "X-Forwarded-Proto": "https"})
    while True:
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise SystemExit(f"gunicorn did not answer {url} within {timeout:.0f} s")
        time.sleep(0.3)


def _wrk(
    port: int, path: str, cookie: str, args: argparse.Namespace, script: Path
) -> dict[str, Any]:
    env = {
        **os.environ,
        "LOADTEST_PATH": path,
        "LOADTEST_COOKIE": cookie,
        "LOADTEST_THINK_MS": args.think_ms,
    }
    threads = min(2, args.users)
    out = subprocess.run(
        ["wrk", f"-t{threads}", f"-c{args.users}", f"-d{args.seconds}s", "--timeout", "10s",
         "-s", str(script), f"http://127.0.0.1:{port}"],
        env=env, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    match = re.search(r"RESULT (.*)", out)
    if not match:
        raise SystemExit(f"wrk gave no result:\n{out}")
    return {k: float(v) for k, v in (kv.split("=") for kv in match.group(1).split())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--seconds", type=int, default=30)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--think-ms", default="1000-5000", help="a user's wait between loads")
    args = parser.parse_args(argv)
    if not re.fullmatch(r"\d+-\d+", args.think_ms):
        parser.error("--think-ms takes LOW-HIGH milliseconds, e.g. 1000-5000")
    if shutil.which("wrk") is None:
        raise SystemExit("wrk not found: apt-get install wrk (make loadtest does)")
    from scripts.embedded import EmbeddedRedis, find_free_port

    with tempfile.TemporaryDirectory(prefix="loadtest-") as tmpdir:
        tmp = Path(tmpdir)
        server = EmbeddedRedis(tmp / "redis").start()
        try:
            env = _env(tmp, f"redis://{server.host}:{server.port}")
            os.environ.update(env)
            cookie = _prepare(args.topics)
            script = tmp / "users.lua"
            script.write_text(WRK_SCRIPT)
            port = find_free_port()
            web = subprocess.Popen(
                [str(Path(sys.executable).parent / "gunicorn"), "config.wsgi",
                 "--log-level", "warning"],  # the rest from gunicorn.conf.py, as deployed
                env={**env, "WEB_BIND": f"127.0.0.1:{port}", "WEB_WORKERS": str(args.workers),
                     "WEB_ACCESS_LOG": ""},
                cwd=ROOT,
            )  # fmt: skip
            try:
                for path in PAGES.values():
                    _wait_http(f"http://127.0.0.1:{port}{path}", cookie)
                print(
                    f"{args.users} users (think time {args.think_ms} ms), {args.seconds} s per "
                    f"page, gunicorn {args.workers} workers, production settings, "
                    f"{args.topics} topics"
                )
                for name, path in PAGES.items():
                    r = _wrk(port, path, cookie, args, script)
                    print(
                        f"{name:9s} p50 {r['p50']:7.1f} ms  p95 {r['p95']:7.1f} ms  "
                        f"p99 {r['p99']:7.1f} ms  {r['requests'] / args.seconds:6.1f} req/s  "
                        f"errors {int(r['non2xx'] + r['errors'])}"
                    )
            finally:
                web.terminate()
                web.wait(timeout=10)
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
