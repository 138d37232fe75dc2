"""A small process supervisor: children in their own process groups, prefixed output.

:class:`Supervisor` starts :class:`ProcessSpec` children in order (waiting for each
one's readiness check), runs one-off steps to completion, watches the children,
restarts them per their policy (with a backoff, giving up after repeated quick
failures) and stops every group cleanly: SIGTERM, a grace period, then SIGKILL for
the whole group so grandchildren die too. Every line a child prints goes through
:class:`Console`, prefixed with the child's name.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Literal

from scripts.demo_settings import DemoSetupError
from scripts.embedded import RedisSetupError

RestartPolicy = Literal["never", "on-failure", "always"]


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


def _kill_group(pgid: int, settle_s: float = 1.0) -> None:
    """SIGKILL whatever is left of a process group (grandchildren of a child that exited).

    Waits up to ``settle_s`` for the group to be gone, killing again meanwhile: a
    process forked while the first signal was delivered escapes it, and a killed
    one still shows as running for a moment.
    """
    deadline = time.monotonic() + settle_s
    while True:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            return
        if time.monotonic() >= deadline:
            return
        time.sleep(0.02)


# --------------------------------------------------------------------------- readiness and signals


def http_ready(url: str) -> Callable[[subprocess.Popen[bytes]], bool]:
    """A readiness check: true once ``url`` answers 200."""

    def check(process: subprocess.Popen[bytes]) -> bool:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    return check


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
