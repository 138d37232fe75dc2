"""``make demo``: runs the whole console locally under :mod:`scripts.supervisor`.

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

All knobs live in :class:`scripts.demo_settings.DemoSettings` (each one has an
environment variable).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass, field

from scripts.demo_settings import PROJECT_ROOT, PYTHON, DemoSettings, DemoSetupError
from scripts.demo_workload import workload_plan
from scripts.embedded import (
    EmbeddedRedis,
    RedisSetupError,
    find_free_port,
    port_in_use,
    probe_ready,
)
from scripts.supervisor import Console, ProcessSpec, Supervisor, http_ready, stop_signals

POISON_MARKER = "POISON-PILL"


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


# A worker that has to stay root says so in the banner once; Celery's own multi-line
# warning (printed at every start) is then filtered out of the worker's output.
ROOT_WARNING_FILTER = "ignore:You're running the worker with superuser privileges"


def _as_root(why: str) -> tuple[list[str], str, dict[str, str]]:
    return [], f"worker runs as root: {why}", {"PYTHONWARNINGS": ROOT_WARNING_FILTER}


def worker_identity(
    settings: DemoSettings, env: dict[str, str]
) -> tuple[list[str], str, dict[str, str]]:
    """Celery's ``--uid/--gid`` arguments that run the worker as ``settings.worker_user`` when
    the demo runs as root (Celery warns about a superuser worker), a note for the banner, and
    the worker's extra environment.

    The user gets the demo's var directory (database, beat schedule); if it cannot import the
    project or write there (e.g. a private home holds the Python), the worker stays root,
    the note says why, and Celery's superuser warning is filtered from its output (the
    banner already said it; a production worker runs as a user of its own, see the
    Dockerfile).
    """
    if os.geteuid() != 0:
        return [], "", {}
    name = settings.worker_user
    if not name or name == "root":
        return _as_root("DEMO_WORKER_USER=root")
    try:
        user = pwd.getpwnam(name)
    except KeyError:
        return _as_root(f"no user {name!r} (set DEMO_WORKER_USER)")
    for path in [settings.var_dir, *settings.var_dir.rglob("*")]:
        if not path.is_relative_to(settings.var_dir / "redis"):
            os.chown(path, user.pw_uid, user.pw_gid)
    probe = settings.var_dir / ".worker-probe"
    try:
        code = subprocess.run(
            [PYTHON, "-c", f"import config.celery; open({str(probe)!r}, 'w').close()"],
            cwd=PROJECT_ROOT, env=env, user=user.pw_uid, group=user.pw_gid, extra_groups=[],
            capture_output=True, check=False, timeout=60,
        ).returncode  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        code = -1  # e.g. the Python itself lives under a private home
    probe.unlink(missing_ok=True)
    if code != 0:
        return _as_root(
            f"user {name} cannot run this Python, read the project or write "
            f"{settings.var_dir} (set DEMO_WORKER_USER)"
        )
    return ["--uid", str(user.pw_uid), "--gid", str(user.pw_gid)], f"worker runs as user {name}", {}


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
        identity, note, worker_env = worker_identity(settings, self.supervisor.base_env)
        if note:
            self.notes.append(note)
        self.supervisor.start(
            ProcessSpec(
                "worker",
                [
                    PYTHON, "-m", "celery", "-A", "config", "worker", "-B",
                    "--loglevel=INFO", "--concurrency=2", "--without-mingle", "--without-gossip",
                    "--hostname=demo@%h", *identity,
                    f"--schedule={settings.var_dir / 'celerybeat-schedule'}",
                ],
                env=worker_env,
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
            "forgot them? `make demo-users` (another terminal) prints new ones and the URL",
            f"MQ Redis: redis://127.0.0.1:{self.redis_port}/0 (console store /1, broker /2)",
            *self.notes,
            "Ctrl-C stops everything.",
            "=" * 64,
        ]
        for line in lines:
            self.console.say(line)
        # where the console is, for `make demo-users` (never the passwords)
        (self.settings.var_dir / "console.json").write_text(json.dumps({"url": self.url}))
        self.remind()

    def remind(self) -> None:
        """Every ``reminder_every_s``, one line saying where the console is (the banner
        with the passwords has scrolled away by then)."""
        every = self.settings.reminder_every_s
        if every > 0:
            self.supervisor.after(
                every,
                f"console: {self.url} · log in with the passwords printed at start-up, "
                "or `make demo-users` for new ones",
                self.remind,
            )


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
            "TASK_EVENT_LOG_LEVEL": "WARNING",  # no Celery line per task; a summary per minute
        }
    )
    return env


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
