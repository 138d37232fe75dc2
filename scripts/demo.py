"""``make demo``: a small process supervisor that runs the whole console locally.

It starts, in order: a private Redis (AOF everysec, data under ``var/demo``),
the database migration, the demo users, a Celery worker with beat, the web
server and, unless ``DEMO_WORKLOAD=0``, the demo workload (producers, consumers
with injected trouble, the retry mover and the Spark pipeline). Each child runs
in its own process group with its output prefixed by its name. Ctrl-C or
SIGTERM stops every child (SIGTERM, a grace period, then SIGKILL for the whole
group, so grandchildren die too). A child that dies unexpectedly is reported
and restarted when its policy says so.

The demo never touches a Redis it did not start: the Redis URLs handed to the
children all point at the server started here, whose pid is checked.

All knobs live in :class:`DemoSettings` (each one has an environment variable).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import IO, Any, Literal

from mqcore.embedded import (
    EmbeddedRedis,
    RedisSetupError,
    find_free_port,
    port_in_use,
    probe_ready,
)

PROJECT_ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
POISON_MARKER = "POISON-PILL"

RestartPolicy = Literal["never", "on-failure", "always"]


class DemoSetupError(RuntimeError):
    """Raised when the demo cannot start (port taken, no redis-server, a failed step)."""


# --------------------------------------------------------------------------- knobs


def _env(name: str) -> dict[str, str]:
    return {"env": name}


@dataclass(frozen=True)
class DemoSettings:
    """Every demo knob in one place; each field can be overridden by its environment variable."""

    web_port: int = field(default=8000, metadata=_env("WEB_PORT"))
    redis_port: int = field(default=6390, metadata=_env("REDIS_PORT"))
    var_dir: Path = field(default=PROJECT_ROOT / "var" / "demo", metadata=_env("DEMO_VAR_DIR"))
    workload: bool = field(default=True, metadata=_env("DEMO_WORKLOAD"))
    spark: bool = field(default=True, metadata=_env("DEMO_SPARK"))
    collect_interval_s: int = field(default=5, metadata=_env("COLLECT_INTERVAL_S"))
    # producers: messages per second (orders swing around their rate so lag has a shape)
    orders_rate: float = field(default=20.0, metadata=_env("DEMO_ORDERS_RATE"))
    payments_rate: float = field(default=8.0, metadata=_env("DEMO_PAYMENTS_RATE"))
    emails_rate: float = field(default=3.0, metadata=_env("DEMO_EMAILS_RATE"))
    poison_share: float = field(default=0.01, metadata=_env("DEMO_POISON_SHARE"))
    # consumers: transient failure rate (retried) and the slow consumer's per-message sleep
    fail_rate: float = field(default=0.02, metadata=_env("DEMO_FAIL_RATE"))
    slow_sleep_ms: int = field(default=400, metadata=_env("DEMO_SLOW_SLEEP_MS"))
    # the consumer that crashes and comes back: first crash, period, time down
    bounce_first_s: float = field(default=120.0, metadata=_env("DEMO_BOUNCE_FIRST_S"))
    bounce_every_s: float = field(default=300.0, metadata=_env("DEMO_BOUNCE_EVERY_S"))
    bounce_down_s: float = field(default=60.0, metadata=_env("DEMO_BOUNCE_DOWN_S"))
    # the consumer that joins and leaves (lease timeline history)
    churn_on_s: float = field(default=150.0, metadata=_env("DEMO_CHURN_ON_S"))
    churn_off_s: float = field(default=120.0, metadata=_env("DEMO_CHURN_OFF_S"))
    # one forced kill of the Spark pipeline so the checkpoints page shows a restore
    pipeline_restart_after_s: float = field(default=240.0, metadata=_env("DEMO_PIPELINE_KILL_S"))
    stop_grace_s: float = field(default=10.0, metadata=_env("DEMO_STOP_GRACE_S"))

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> DemoSettings:
        environ = dict(os.environ if environ is None else environ)
        values: dict[str, Any] = {}
        for f in fields(cls):
            name = f.metadata["env"]
            raw = environ.get(name, "").strip()
            if not raw:
                continue
            try:
                values[f.name] = _parse(raw, f.type)
            except ValueError as exc:
                raise DemoSetupError(f"{name}={raw!r} is not a valid {f.type}: {exc}") from exc
        return cls(**values)

    def explicit(self, field_name: str, environ: dict[str, str] | None = None) -> bool:
        """Whether the user set this knob (a taken default port is replaced, a set one not)."""
        environ = dict(os.environ if environ is None else environ)
        env_name = next(f.metadata["env"] for f in fields(self) if f.name == field_name)
        return bool(environ.get(env_name, "").strip())


def _parse(raw: str, type_name: Any) -> Any:
    kind = str(type_name)
    if kind == "bool":
        if raw.lower() in {"1", "true", "yes", "on"}:
            return True
        if raw.lower() in {"0", "false", "no", "off"}:
            return False
        raise ValueError("use 1 or 0")
    if kind == "int":
        return int(raw)
    if kind == "float":
        return float(raw)
    if kind == "Path":
        return Path(raw).resolve()
    return raw


# --------------------------------------------------------------------------- output


class Console:
    """Prints whole lines, each prefixed with the process name (one lock, no interleaving)."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        self.stream = stream or sys.stdout
        self.lock = threading.Lock()
        self.width = 17

    def line(self, name: str, text: str) -> None:
        with self.lock:
            self.stream.write(f"{name:<{self.width}}| {text}\n")
            self.stream.flush()

    def say(self, text: str) -> None:
        self.line("demo", text)


def _pump(source: IO[bytes], name: str, console: Console) -> None:
    for raw in iter(source.readline, b""):
        console.line(name, raw.decode("utf-8", "replace").rstrip())
    source.close()


# --------------------------------------------------------------------------- processes


@dataclass
class ProcessSpec:
    """One long-running child: how to start it, how to know it is ready, what to do when it dies.

    ``critical``: if it dies and is not (or no longer) restarted, the demo stops.
    """

    name: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    ready: Callable[[subprocess.Popen[bytes]], bool] | None = None
    ready_timeout_s: float = 60.0
    restart: RestartPolicy = "on-failure"
    critical: bool = False


@dataclass
class Child:
    spec: ProcessSpec
    process: subprocess.Popen[bytes]
    started_at: float
    expected_exit: bool = False
    quick_failures: int = 0
    restart_at: float | None = None
    pump: threading.Thread | None = None


QUICK_FAILURE_S = 10.0  # a run shorter than this counts towards giving up
MAX_QUICK_FAILURES = 5


class Supervisor:
    """Starts specs in order, watches them, restarts per policy and stops them all cleanly."""

    def __init__(self, console: Console, *, cwd: Path, base_env: dict[str, str]) -> None:
        self.console = console
        self.cwd = cwd
        self.base_env = base_env
        self.children: dict[str, Child] = {}
        self.order: list[str] = []
        self.stopping = threading.Event()
        self.failed: str | None = None
        self.restart_backoff_s = 1.0  # doubled per quick failure, at most 30 s
        self.max_quick_failures = MAX_QUICK_FAILURES
        self._timers: list[tuple[float, str, Callable[[], None]]] = []

    # -- starting -------------------------------------------------------------
    def _popen(self, spec: ProcessSpec, *, capture: bool = False) -> subprocess.Popen[bytes]:
        env = {**self.base_env, **spec.env}
        return subprocess.Popen(
            spec.argv,
            cwd=self.cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE if capture else subprocess.STDOUT,
            start_new_session=True,  # own process group: Ctrl-C reaches us only, we stop them
        )

    def start(self, spec: ProcessSpec) -> Child:
        process = self._popen(spec)
        child = Child(spec=spec, process=process, started_at=time.monotonic())
        previous = self.children.get(spec.name)
        if previous is not None:
            child.quick_failures = previous.quick_failures
        else:
            self.order.append(spec.name)
        self.children[spec.name] = child
        assert process.stdout is not None
        child.pump = threading.Thread(
            target=_pump, args=(process.stdout, spec.name, self.console), daemon=True
        )
        child.pump.start()
        self.console.say(f"started {spec.name} (pid {process.pid})")
        if spec.ready is not None:
            self._wait_ready(child)
        return child

    def _wait_ready(self, child: Child) -> None:
        spec = child.spec
        deadline = time.monotonic() + spec.ready_timeout_s
        assert spec.ready is not None
        while not self.stopping.is_set():
            if child.process.poll() is not None:
                raise DemoSetupError(
                    f"{spec.name} exited with code {child.process.returncode} before it was ready"
                    " (its output is above)"
                )
            try:
                ready = spec.ready(child.process)
            except (DemoSetupError, RedisSetupError):
                raise  # a wrong setup (e.g. another process on our port) is final
            except Exception:
                ready = False  # not answering yet
            if ready:
                self.console.say(f"{spec.name} is ready")
                return
            if time.monotonic() > deadline:
                raise DemoSetupError(
                    f"{spec.name} was not ready within {spec.ready_timeout_s:.0f}s"
                )
            time.sleep(0.2)

    def run_once(self, spec: ProcessSpec, *, capture_stdout: bool = False) -> str:
        """Run a step to completion (migrate, user creation); its output is prefixed.

        With ``capture_stdout`` the step's stdout is returned instead of printed.
        """
        process = self._popen(spec, capture=capture_stdout)
        self.console.say(f"running {spec.name}: {' '.join(spec.argv[1:])}")
        stream = process.stderr if capture_stdout else process.stdout
        assert stream is not None
        pump = threading.Thread(target=_pump, args=(stream, spec.name, self.console), daemon=True)
        pump.start()
        captured = b""
        if capture_stdout:
            assert process.stdout is not None
            captured = process.stdout.read()
        while process.poll() is None:
            if self.stopping.is_set():
                self._terminate_group(process, spec.name)
                raise DemoSetupError(f"interrupted during {spec.name}")
            time.sleep(0.1)
        pump.join(timeout=2)
        if process.returncode != 0:
            raise DemoSetupError(
                f"{spec.name} failed with exit code {process.returncode} (its output is above)"
            )
        return captured.decode("utf-8", "replace")

    # -- scheduled actions (the workload's stops, churn and forced restarts) ---
    def after(self, delay_s: float, label: str, action: Callable[[], None]) -> None:
        self._timers.append((time.monotonic() + delay_s, label, action))

    def _run_due_timers(self) -> None:
        now = time.monotonic()
        due = [t for t in self._timers if t[0] <= now]
        self._timers = [t for t in self._timers if t[0] > now]
        for _, label, action in due:
            self.console.say(label)
            try:
                action()
            except Exception as exc:  # a scheduled action must never take the demo down
                self.console.say(f"scheduled action failed: {exc}")

    # -- watching ----------------------------------------------------------------
    def watch(self) -> None:
        """Loop until Ctrl-C/SIGTERM or a critical child is gone for good."""
        while not self.stopping.wait(0.5):
            self._run_due_timers()
            for child in list(self.children.values()):
                self._check(child)
            if self.failed:
                return

    def _check(self, child: Child) -> None:
        code = child.process.poll()
        now = time.monotonic()
        if code is None:
            return
        if child.restart_at is not None:
            if now >= child.restart_at:
                child.restart_at = None
                self.start(child.spec)
            return
        if child.expected_exit:
            return
        spec = child.spec
        self.console.say(f"{spec.name} (pid {child.process.pid}) exited unexpectedly, code {code}")
        if now - child.started_at < QUICK_FAILURE_S:
            child.quick_failures += 1
        else:
            child.quick_failures = 0
        restart = spec.restart == "always" or (spec.restart == "on-failure" and code != 0)
        if restart and child.quick_failures < self.max_quick_failures:
            delay = min(30.0, self.restart_backoff_s * 2.0**child.quick_failures)
            self.console.say(f"restarting {spec.name} in {delay:.0f}s")
            child.restart_at = now + delay
            return
        if restart:
            self.console.say(
                f"giving up on {spec.name} after {child.quick_failures} quick failures"
            )
        child.expected_exit = True
        if spec.critical:
            self.failed = spec.name

    # -- stopping -----------------------------------------------------------------
    def kill(self, name: str, *, sig: int = signal.SIGTERM, hold: bool = True) -> None:
        """Stop one child on purpose (``hold``: no automatic restart; see :meth:`resume`)."""
        child = self.children.get(name)
        if child is None or child.process.poll() is not None:
            return
        child.expected_exit = hold
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.process.pid, sig)

    def resume(self, name: str) -> None:
        child = self.children.get(name)
        if child is not None and child.process.poll() is not None:
            self.start(child.spec)

    def _terminate_group(self, process: subprocess.Popen[bytes], name: str) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.console.say(f"{name} ignored SIGTERM; killing it")
        _kill_group(process.pid)
        process.wait()

    def stop_all(self, grace_s: float, last: tuple[str, ...] = ()) -> None:
        """SIGTERM every group (``last`` ones after the rest), wait, then SIGKILL what is left."""
        self._timers.clear()
        names = [n for n in reversed(self.order) if n not in last]
        for batch in (names, [n for n in last if n in self.children]):
            alive = [self.children[n] for n in batch if self.children[n].process.poll() is None]
            for child in alive:
                child.expected_exit = True
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child.process.pid, signal.SIGTERM)
            deadline = time.monotonic() + grace_s
            for child in alive:
                try:
                    child.process.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    self.console.say(
                        f"{child.spec.name} ignored SIGTERM for {grace_s:.0f}s; killing"
                    )
            for child in alive:
                _kill_group(child.process.pid)
                child.process.wait()
                if child.pump is not None:
                    child.pump.join(timeout=2)
            for child in alive:
                self.console.say(f"stopped {child.spec.name}")


def _kill_group(pgid: int) -> None:
    """SIGKILL whatever is left of a process group (grandchildren of a child that exited)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


# --------------------------------------------------------------------------- setup checks


def port_taken(port: int, host: str = "127.0.0.1") -> bool:
    if port_in_use(port, host):
        return True
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False


def choose_port(port: int, *, env_name: str, explicit: bool, console: Console) -> int:
    """The requested port; a taken default is replaced by a free one, a taken explicit one fails."""
    if not port_taken(port):
        return port
    if explicit:
        raise DemoSetupError(
            f"port {port} (from {env_name}) is already taken on 127.0.0.1; "
            f"choose another one, e.g. `{env_name}={find_free_port()} make demo`"
        )
    free = find_free_port()
    console.say(f"port {port} is taken; using {free} instead (set {env_name}=... to choose)")
    return free


def spark_available() -> str | None:
    """None when the Spark pipeline can run here, else why not."""
    if importlib.util.find_spec("pyspark") is None:
        return "pyspark is not installed"
    if not (shutil.which("java") or os.environ.get("JAVA_HOME")):
        return "no Java runtime (as root: apt-get install default-jre-headless)"
    return None


def http_ready(url: str) -> Callable[[subprocess.Popen[bytes]], bool]:
    def check(process: subprocess.Popen[bytes]) -> bool:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    return check


# --------------------------------------------------------------------------- the demo


@dataclass
class Demo:
    settings: DemoSettings
    console: Console
    supervisor: Supervisor
    redis_port: int
    web_port: int
    credentials: list[dict[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}/"

    def manage(self, *args: str) -> list[str]:
        return [PYTHON, str(PROJECT_ROOT / "manage.py"), *args]

    def start_console(self) -> None:
        settings = self.settings
        server = EmbeddedRedis(settings.var_dir / "redis", port=self.redis_port, persistence=True)
        server.data_dir.mkdir(parents=True, exist_ok=True)
        self.supervisor.start(
            ProcessSpec(
                "redis",
                server.command(),
                ready=lambda process: probe_ready("127.0.0.1", self.redis_port, process.pid),
                ready_timeout_s=30,
                critical=True,
            )
        )
        self.console.say(f"redis {self.redis_port}: data in {server.data_dir} (AOF everysec)")
        self.supervisor.run_once(ProcessSpec("migrate", self.manage("migrate", "--no-input")))
        out = self.supervisor.run_once(
            ProcessSpec("users", self.manage("demo_users", "--json")), capture_stdout=True
        )
        self.credentials = json.loads(out.strip().splitlines()[-1])["users"]
        self.supervisor.start(
            ProcessSpec(
                "worker",
                [
                    PYTHON, "-m", "celery", "-A", "config", "worker", "-B",
                    "--loglevel=INFO", "--concurrency=2", "--without-mingle", "--without-gossip",
                    "--hostname=demo@%h",
                    f"--schedule={settings.var_dir / 'celerybeat-schedule'}",
                ],
                critical=True,
            )
        )  # fmt: skip
        self.supervisor.start(
            ProcessSpec(
                "web",
                self.manage("runserver", f"127.0.0.1:{self.web_port}", "--noreload"),
                ready=http_ready(f"{self.url}login/"),
                ready_timeout_s=60,
                critical=True,
            )
        )

    def start_workload(self) -> None:
        from scripts.demo_workload import workload_plan

        try:
            self.supervisor.run_once(
                ProcessSpec("topics", [PYTHON, "-m", "scripts.demo_workload", "setup"])
            )
        except DemoSetupError as exc:
            self.notes.append(f"workload skipped: {exc}")
            return
        plan = workload_plan(self.settings, poison_marker=POISON_MARKER)
        for spec in plan.always:
            self.supervisor.start(spec)
        s = self.settings
        sup = self.supervisor
        bounce = plan.bounce
        sup.start(bounce)

        def bounce_down() -> None:
            sup.kill(bounce.name, sig=signal.SIGKILL)
            sup.after(s.bounce_down_s, f"{bounce.name} comes back", lambda: sup.resume(bounce.name))
            sup.after(s.bounce_every_s, f"{bounce.name} crashes (SIGKILL)", bounce_down)

        sup.after(s.bounce_first_s, f"{bounce.name} crashes (SIGKILL)", bounce_down)
        churn = plan.churn

        def churn_join() -> None:
            if churn.name in sup.children:
                sup.resume(churn.name)
            else:
                sup.start(churn)
            sup.after(s.churn_on_s, f"{churn.name} leaves", churn_leave)

        def churn_leave() -> None:
            sup.kill(churn.name)
            sup.after(s.churn_off_s, f"{churn.name} joins", churn_join)

        sup.after(s.churn_off_s / 2, f"{churn.name} joins", churn_join)
        self.notes.append(
            f"{bounce.name} crashes after {s.bounce_first_s:.0f}s and every "
            f"{s.bounce_every_s:.0f}s, back after {s.bounce_down_s:.0f}s; "
            f"{churn.name} joins and leaves"
        )
        if not s.spark:
            self.notes.append("Spark pipeline off (DEMO_SPARK=0)")
            return
        why_not = spark_available()
        if why_not:
            self.notes.append(f"Spark pipeline skipped: {why_not}")
            return
        pipeline = plan.pipeline(self.manage)
        sup.start(pipeline)
        sup.after(
            s.pipeline_restart_after_s,
            f"forced restart of {pipeline.name} (SIGKILL; it restores from its checkpoint)",
            lambda: sup.kill(pipeline.name, sig=signal.SIGKILL, hold=False),
        )

    def banner(self) -> None:
        lines = [
            "",
            "=" * 64,
            f"console: {self.url}",
            "log in as (passwords are printed only now):",
            *(
                f"  user {c['username']:<9} password {c['password']:<20} role {c['role']}"
                for c in self.credentials
            ),
            f"MQ Redis: redis://127.0.0.1:{self.redis_port}/0 (console store /1, broker /2)",
            *self.notes,
            "Ctrl-C stops everything.",
            "=" * 64,
        ]
        for line in lines:
            self.console.say(line)


def child_env(settings: DemoSettings, redis_port: int) -> dict[str, str]:
    base = f"redis://127.0.0.1:{redis_port}"
    env = {k: v for k, v in os.environ.items() if k not in {"MQ_CLUSTERS", "DATABASE_URL"}}
    env.update(
        {
            "MQ_REDIS_URL": f"{base}/0",
            "CONSOLE_REDIS_URL": f"{base}/1",
            "CELERY_BROKER_URL": f"{base}/2",
            "DJANGO_SETTINGS_MODULE": "config.settings.dev",
            "COLLECT_INTERVAL_S": str(settings.collect_interval_s),
            "OPSDASH_VAR_DIR": str(settings.var_dir),
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


@contextlib.contextmanager
def stop_signals(event: threading.Event) -> Iterator[None]:
    """SIGINT/SIGTERM set ``event`` instead of raising in the middle of a step."""

    def handler(signum: int, frame: object) -> None:
        event.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def main() -> int:
    console = Console()
    try:
        settings = DemoSettings.from_env()
        settings.var_dir.mkdir(parents=True, exist_ok=True)
        redis_port = choose_port(
            settings.redis_port,
            env_name="REDIS_PORT",
            explicit=settings.explicit("redis_port"),
            console=console,
        )
        web_port = choose_port(
            settings.web_port,
            env_name="WEB_PORT",
            explicit=settings.explicit("web_port"),
            console=console,
        )
        EmbeddedRedis(settings.var_dir / "redis", port=redis_port)  # finds + version-checks
    except (DemoSetupError, RedisSetupError) as exc:
        console.say(f"error: {exc}")
        return 2
    supervisor = Supervisor(console, cwd=PROJECT_ROOT, base_env=child_env(settings, redis_port))
    demo = Demo(settings, console, supervisor, redis_port=redis_port, web_port=web_port)
    code = 0
    with stop_signals(supervisor.stopping):
        try:
            demo.start_console()
            if settings.workload:
                demo.start_workload()
            else:
                demo.notes.append("workload off (DEMO_WORKLOAD=0)")
            if not supervisor.stopping.is_set():
                demo.banner()
                supervisor.watch()
            if supervisor.failed:
                console.say(f"error: {supervisor.failed} is gone; stopping the demo")
                code = 1
        except (DemoSetupError, RedisSetupError) as exc:
            if not supervisor.stopping.is_set():
                console.say(f"error: {exc}")
                code = 1
        finally:
            console.say("stopping every process ...")
            supervisor.stop_all(settings.stop_grace_s, last=("redis",))
            console.say("all stopped")
    return code


if __name__ == "__main__":
    sys.exit(main())
