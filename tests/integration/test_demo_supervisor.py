"""`make demo`'s supervisor as a user runs it: a real subprocess on free ports.

The console part only (DEMO_WORKLOAD=0): login page served, each printed demo
user can log in, and Ctrl-C (SIGINT) leaves no process and no port behind.
Bad setups (port taken, no redis-server, Redis < 7.0) end with a clear message.
"""

from __future__ import annotations

import contextlib
import http.cookiejar
import io
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from scripts.embedded import find_free_port, port_in_use
from scripts.supervisor import Console, ProcessSpec, Supervisor

ROOT = Path(__file__).resolve().parents[2]
STARTED = re.compile(r"started (\S+) \(pid (\d+)\)")
CREDENTIALS = re.compile(r"user (\w+)\s+password (\S+)\s+role (\w+)")


class DemoRun:
    """The supervisor process plus every line it printed (read by a thread)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.lines: list[str] = []
        self.process = subprocess.Popen(
            [sys.executable, "-m", "scripts.demo"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        with self.process.stdout:
            for line in self.process.stdout:
                self.lines.append(line.rstrip("\n"))

    def wait_for(self, needle: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(needle in line for line in self.lines):
                return
            if self.process.poll() is not None:
                self.reader.join(timeout=5)
                if any(needle in line for line in self.lines):
                    return
                break
            time.sleep(0.1)
        pytest.fail(f"{needle!r} not printed; output:\n" + "\n".join(self.lines[-60:]))

    def child_pids(self) -> dict[str, int]:
        pids: dict[str, int] = {}
        for line in self.lines:
            if match := STARTED.search(line):
                pids[match[1]] = int(match[2])
        return pids


def demo_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DEMO_", "PYTEST_"))}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    env.update(
        {
            "WEB_PORT": str(find_free_port()),
            "REDIS_PORT": str(find_free_port()),
            "DEMO_VAR_DIR": str(tmp_path / "var"),
            "DEMO_WORKLOAD": "0",
            "DEMO_STOP_GRACE_S": "8",
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.update(extra)
    return env


def process_groups_alive(pgids: set[int]) -> list[str]:
    """Processes (any, grandchildren included) still in one of ``pgids``."""
    alive = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            stat = (entry / "stat").read_text()
            fields = stat.rsplit(")", 1)[1].split()
            state, pgid = fields[0], int(fields[2])
            if pgid in pgids and state != "Z":
                alive.append(f"pid {entry.name} in group {pgid}: {stat[:80]}")
    return alive


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[tuple[DemoRun, dict[str, str]]]:
    env = demo_env(tmp_path)
    run = DemoRun(env)
    try:
        yield run, env
    finally:
        if run.process.poll() is None:
            run.process.kill()
            run.process.wait()
        for pid in run.child_pids().values():  # never leak children, even on failure
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)


def login(base: str, username: str, password: str) -> tuple[str, str]:
    """Log in through the real form (CSRF token + cookie); returns (final path, page body)."""
    opener = urllib.request.build_opener(
        urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
    )
    with opener.open(f"{base}/login/", timeout=10) as response:
        form = response.read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)
    assert token, form
    data = urllib.parse.urlencode(
        {"username": username, "password": password, "csrfmiddlewaretoken": token[1], "next": "/"}
    ).encode()
    request = urllib.request.Request(f"{base}/login/", data=data, headers={"Referer": base})
    with opener.open(request, timeout=10) as response:
        return urllib.parse.urlsplit(response.url).path, response.read().decode()


def test_demo_serves_login_logs_in_each_user_and_ctrl_c_stops_everything(
    demo: tuple[DemoRun, dict[str, str]],
) -> None:
    run, env = demo
    run.wait_for("Ctrl-C stops everything", timeout=60)
    base = f"http://127.0.0.1:{env['WEB_PORT']}"
    assert any(f"console: {base}/" in line for line in run.lines)

    credentials = {m[1]: (m[2], m[3]) for line in run.lines if (m := CREDENTIALS.search(line))}
    assert {u: role for u, (_, role) in credentials.items()} == {
        "admin": "Admin", "operator": "Operator", "viewer": "Viewer",
    }  # fmt: skip
    for username, (password, _) in credentials.items():
        path, body = login(base, username, password)
        assert path != "/login/", f"{username} could not log in"
        assert 'name="password"' not in body
        assert username in body
    bad_path, _ = login(base, "viewer", "wrong-password")
    assert bad_path == "/login/"

    with urllib.request.urlopen(f"{base}/readyz", timeout=10) as response:
        assert response.status == 200  # Redis and the database of this demo answer

    # the banner says how to get new passwords; `make demo-users` prints them and the URL
    assert any("make demo-users" in line for line in run.lines)
    assert any("worker runs as" in line for line in run.lines) == (os.geteuid() == 0)
    users = subprocess.run(
        [sys.executable, "manage.py", "demo_users", "--demo"],
        cwd=ROOT,
        env={**env, "OPSDASH_VAR_DIR": env["DEMO_VAR_DIR"],
             "DJANGO_SETTINGS_MODULE": "config.settings.dev"},
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert f"console: {base}/" in users.stdout
    fresh = dict(re.findall(r"^\s+(\w+)\s+(\S+)\s+role", users.stdout, re.MULTILINE))
    assert set(fresh) == {"admin", "operator", "viewer"}
    assert login(base, "viewer", fresh["viewer"])[0] != "/login/"
    assert login(base, "viewer", credentials["viewer"][0])[0] == "/login/"  # reset

    pids = run.child_pids()
    assert {"redis", "worker", "web"} <= set(pids)
    run.process.send_signal(signal.SIGINT)
    assert run.process.wait(timeout=40) == 0
    run.reader.join(timeout=5)
    assert any("all stopped" in line for line in run.lines)
    assert process_groups_alive(set(pids.values())) == []
    assert not port_in_use(int(env["WEB_PORT"]))
    assert not port_in_use(int(env["REDIS_PORT"]))


def run_demo_to_exit(env: dict[str, str]) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-m", "scripts.demo"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done.returncode, done.stdout + done.stderr


def test_taken_web_port_names_the_variable_to_set(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, out = run_demo_to_exit(demo_env(tmp_path, WEB_PORT=str(port)))
    assert code == 2
    assert f"port {port} (from WEB_PORT) is already taken" in out
    assert "WEB_PORT=" in out


def test_missing_redis_server_says_how_to_fix(tmp_path: Path) -> None:
    if (ROOT / ".local" / "redis" / "usr" / "bin" / "redis-server").exists():
        pytest.skip("a project-local redis-server exists and would be used")
    code, out = run_demo_to_exit(
        demo_env(tmp_path, REDIS_SERVER_BIN=str(tmp_path / "no-such-redis-server"))
    )
    assert code == 2
    assert "apt-get install redis-server" in out


def test_redis_older_than_7_is_refused(tmp_path: Path) -> None:
    if (ROOT / ".local" / "redis" / "usr" / "bin" / "redis-server").exists():
        pytest.skip("a project-local redis-server exists and would be used")
    old = tmp_path / "redis-server"
    old.write_text("#!/bin/sh\necho 'Redis server v=6.2.14 sha=00000000:0 malloc=libc'\n")
    old.chmod(0o755)
    code, out = run_demo_to_exit(demo_env(tmp_path, REDIS_SERVER_BIN=str(old)))
    assert code == 2
    assert "Redis >= 7.0 is required" in out
    assert "6.2.14" in out


def quiet_supervisor() -> tuple[Supervisor, io.StringIO]:
    out = io.StringIO()
    supervisor = Supervisor(Console(out), cwd=ROOT, base_env=dict(os.environ))
    supervisor.restart_backoff_s = 0.01
    return supervisor, out


def test_a_crashing_child_is_reported_restarted_then_given_up() -> None:
    supervisor, out = quiet_supervisor()
    supervisor.max_quick_failures = 3
    supervisor.start(
        ProcessSpec("flaky", [sys.executable, "-c", "raise SystemExit(3)"], critical=True)
    )
    guard = threading.Timer(30, supervisor.stopping.set)
    guard.start()
    try:
        supervisor.watch()
    finally:
        guard.cancel()
    assert supervisor.failed == "flaky"
    text = out.getvalue()
    assert text.count("started flaky (pid") == 3
    assert "exited unexpectedly, code 3" in text
    assert "giving up on flaky after 3 quick failures" in text


def test_stop_all_kills_grandchildren_and_children_ignoring_sigterm() -> None:
    supervisor, out = quiet_supervisor()
    stubborn = (
        "import signal, subprocess, time; signal.signal(signal.SIGTERM, signal.SIG_IGN);"
        "subprocess.Popen(['sleep', '60']); print('up', flush=True); time.sleep(60)"
    )
    supervisor.start(ProcessSpec("stubborn", [sys.executable, "-c", stubborn]))
    supervisor.start(ProcessSpec("shell", ["sh", "-c", "sleep 60 & sleep 60"]))
    pgids = {child.process.pid for child in supervisor.children.values()}
    deadline = time.monotonic() + 10
    while "up" not in out.getvalue() and time.monotonic() < deadline:
        time.sleep(0.05)
    supervisor.kill("shell")  # on purpose: not restarted, and resumable
    supervisor.children["shell"].process.wait(timeout=5)
    supervisor.resume("shell")
    pgids.add(supervisor.children["shell"].process.pid)
    supervisor.stop_all(grace_s=0.5)
    assert "stubborn ignored SIGTERM" in out.getvalue()
    assert process_groups_alive(pgids) == []
