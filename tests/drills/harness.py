"""The incident drills' harness: real processes, real collector passes, a real webhook receiver.

A drill runs on the session's private redis-server (tests/conftest.py) with the console's
thresholds compressed (:data:`DRILL_SETTINGS`: passes 1 s apart, the default window of 5
samples, so a STOP after the window's span comes after as many passes as at the default
10 s interval). It drives:

- consumers: ``tests.faults.worker`` subprocesses (a mqcore Consumer, whose retry mover runs
  inside it; its lease TTL, 1.5 s, is a tenth of mqcore's default like the passes' spacing),
  stopped with SIGTERM or killed with SIGKILL;
- producers: mqcore Producers in threads, at a steady rate;
- the collector: :meth:`Drill.collect` runs one pass the way the product does, through the
  Celery task (``collect_cluster_task``), in the pass's own 1 s slot; the alert opens and
  closes it reports go through ``alert_notify_task`` (eager) to :class:`WebhookReceiver`;
- the read side: ``/metrics`` through Django's test client and the timeline through
  ``manage.py timeline --json``.

:meth:`Drill.until` counts the passes from the injection (:meth:`Drill.inject`) to the first
correct signal; :meth:`Drill.detected` records it (shown in the run's summary and in the
table of docs/operators.md). Nothing here asserts on wall time: only pass counts.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from io import StringIO
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from mqcore.config import MQConfig
from mqcore.producer import Producer
from scripts.webhook_server import WebhookServer

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = "default"  # the harness's one cluster (tests/conftest.py)
DEFAULT_INTERVAL_S = 10  # COLLECT_INTERVAL_S's default: the passes' spacing in production

# Compressed thresholds: time scaled by the intervals' ratio (1 s / 10 s), so that a drill's
# passes are the passes at the default settings: the window (5 samples) and STOP after its
# span keep their defaults in passes. Only the status alert's hold (300 s: 30 passes) is
# shrunk further, to 2 passes, to keep each drill short; the detection table adds it back.
# A drill that watches one rule may shorten that rule's threshold (it says so).
DRILL_SETTINGS: dict[str, Any] = {
    "COLLECT_INTERVAL_S": 1,
    "STATUS_WINDOW_SAMPLES": 5,
    "STATUS_ALLOWED_LAG": 0,
    "STATUS_STOP_AFTER_S": 0,  # the window's span: 5 passes
    "STATUS_TOPIC_THRESHOLDS": {},
    "ALERT_STATUS_FOR_S": 2,  # default 300 s
    "ALERT_DLQ_GROWTH": 1,
    "DLQ_GROWTH_WINDOW_S": 30,  # default 300 s
    "ALERT_OLDEST_PENDING_S": 60,  # default 600 s
    "ALERT_CHECKPOINT_AGE_S": 90,  # default 900 s
    "ALERT_COLLECTOR_FAILURES": 3,
    "ALERT_RESTART_HOLD_S": 360,  # default 3600 s
    "METRICS_BEARER_TOKEN": "",
}


class WebhookReceiver:
    """Every alert webhook POSTed to a local :class:`~scripts.webhook_server.WebhookServer`,
    in order."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.server = WebhookServer(self.events.append)
        self.url = self.server.url

    def ids(self, event: str) -> list[str]:
        """The alert ids of every ``event`` ("opened" or "resolved") received, in order."""
        return [e["alert"]["id"] for e in self.events if e.get("event") == event]

    def alert(self, alert_id: str) -> dict[str, Any]:
        """The alert of the first "opened" event of ``alert_id``."""
        return next(
            e["alert"]
            for e in self.events
            if e.get("event") == "opened" and e["alert"]["id"] == alert_id
        )

    def close(self) -> None:
        self.server.close()


class ProducerLoop(threading.Thread):
    """A mqcore Producer sending ``{"producer", "seq"}`` payloads at ``rate`` per second."""

    def __init__(self, config: MQConfig, topic: str, rate: float, name: str = "p") -> None:
        super().__init__(daemon=True)
        self.producer = Producer(config)
        self.topic, self.rate, self.tag = topic, rate, name
        self.sent = 0
        self.halt = threading.Event()

    def run(self) -> None:
        started = time.monotonic()
        while not self.halt.is_set():
            due = int((time.monotonic() - started) * self.rate) + 1
            while self.sent < due:
                body = json.dumps({"producer": self.tag, "seq": self.sent})
                self.producer.send(self.topic, body, key=f"k{self.sent}")
                self.sent += 1
            self.halt.wait(min(0.05, 1 / self.rate))

    def stop(self) -> None:
        self.halt.set()
        self.join(timeout=5)
        self.producer.close()


def send(config: MQConfig, topic: str, count: int, *, tag: str = "p") -> None:
    """``count`` messages at once, the payloads of :class:`ProducerLoop`."""
    producer = Producer(config)
    try:
        for seq in range(count):
            body = json.dumps({"producer": tag, "seq": seq})
            producer.send(topic, body, key=f"k{seq}")
    finally:
        producer.close()


@dataclass
class ConsumerProc:
    """A consumer subprocess (``tests.faults.worker``) and the name it runs under."""

    proc: subprocess.Popen[str]
    name: str

    def stop(self, *, kill: bool = False) -> None:
        """SIGTERM (a clean stop: leases released) or SIGKILL (a crash: leases left to expire)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


@dataclass(frozen=True)
class Detection:
    """Passes from the injection to the first correct signal, and that time in production
    (``default_s``: the passes at the default interval unless the drill says otherwise, as
    when an alert's hold time or limit was compressed)."""

    drill: str
    signal: str
    passes: int | None  # None: no signal is expected, or it does not come from a pass
    default_s: int | None

    def line(self) -> str:
        if self.passes is None:
            at = "" if self.default_s is None else f" (~{self.default_s} s at the defaults)"
            return f"drill {self.drill}: {self.signal}{at}"
        return (
            f"drill {self.drill}: {self.signal} after {self.passes} passes "
            f"(~{self.default_s} s at the default settings)"
        )


@dataclass
class Drill:
    """One drill: its passes, its processes, what it saw."""

    config: MQConfig
    redis_url: str
    receiver: WebhookReceiver
    workdir: Path
    passes: int = 0
    injected_at: int = 0
    consumers: list[ConsumerProc] = field(default_factory=list)
    producers: list[ProducerLoop] = field(default_factory=list)
    detections: list[Detection] = field(default_factory=list)
    history: list[dict[tuple[str, str], str]] = field(default_factory=list)  # per pass
    last_slot: int = -1

    # --- processes -------------------------------------------------------------------------
    def consumer(self, topic: str, *, group: str = "default-group", **opts: Any) -> ConsumerProc:
        """Start a consumer process; options are ``tests.faults.worker``'s (``handle_ms=...``)."""
        args = [sys.executable, "-m", "tests.faults.worker", "--url", self.redis_url]
        args += ["--topic", topic, "--group", group, "--sink", f"drill:sink:{topic}"]
        for key, value in opts.items():
            args += [f"--{key.replace('_', '-')}", str(value)]
        log = (self.workdir / f"consumer-{len(self.consumers)}.log").open("w")
        proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=log, text=True)
        log.close()
        assert proc.stdout is not None
        line = proc.stdout.readline()  # "READY <name>"
        assert line.startswith("READY "), f"consumer did not start: {line!r}"
        started = ConsumerProc(proc, line.split()[1])
        self.consumers.append(started)
        return started

    def producer(self, topic: str, rate: float, name: str = "p") -> ProducerLoop:
        loop = ProducerLoop(self.config, topic, rate, name)
        loop.start()
        self.producers.append(loop)
        return loop

    def close(self) -> None:
        for loop in self.producers:
            loop.stop()
        for proc in self.consumers:
            proc.stop(kill=True)

    # --- the collector ---------------------------------------------------------------------
    def collect(self) -> None:
        """One collector pass through the Celery task, in a 1 s slot of its own.

        The pass claims the slot of its own clock reading; one that lands in the slot of
        the previous pass (a slow machine, a second's boundary) is not stored, and the next
        slot is tried (at most twice more)."""
        from dashboard.tasks.collect import collect_cluster_task

        for _ in range(3):
            now = time.time()
            slot = max(self.last_slot + 1, int(now) + (1 if now % 1 > 0.8 else 0))
            if slot > now:
                time.sleep(slot + 0.02 - now)
            result = collect_cluster_task.apply(args=(CLUSTER,)).get()
            self.last_slot = int(time.time())
            if result["stored"]:
                break
            assert result["error"] is None, f"pass {self.passes + 1} failed: {result}"
        else:
            raise AssertionError(f"pass {self.passes + 1} not stored in 3 slots")
        self.passes += 1
        self.history.append(self.group_statuses())

    def warm_up(self, passes: int = 6) -> None:
        """Passes before the failure (6 by default: a full window of healthy samples)."""
        for _ in range(passes):
            self.collect()

    def inject(self) -> None:
        """Mark the injection: detection counts passes from here."""
        self.injected_at = self.passes

    def until(self, what: str, predicate: Callable[[], Any], *, max_passes: int) -> int:
        """Run passes until ``predicate`` holds; the passes since the injection."""
        for _ in range(max_passes):
            self.collect()
            if predicate():
                return self.passes - self.injected_at
        raise AssertionError(
            f"{what}: not seen within {max_passes} passes; statuses since the injection "
            f"{self.history[self.injected_at :]}, webhooks {self.receiver.events}"
        )

    def seen(self, topic: str, group: str = "default-group") -> list[str | None]:
        """The group's status at each pass since the injection."""
        return [h.get((topic, group)) for h in self.history[self.injected_at :]]

    def first(self, topic: str, statuses: set[str], group: str = "default-group") -> int:
        """The first pass since the injection whose status of the group is in ``statuses``."""
        seen = self.seen(topic, group)
        return next(i for i, status in enumerate(seen, start=1) if status in statuses)

    def detected(
        self, drill: str, signal: str, passes: int | None, *, default_s: int | None = None
    ) -> Detection:
        """Record (and print) a detection; ``default_s`` defaults to the passes at 10 s."""
        seconds = default_s
        if seconds is None and passes is not None:
            seconds = passes * DEFAULT_INTERVAL_S
        found = Detection(drill, signal, passes, seconds)
        print(found.line())
        self.detections.append(found)
        return found

    # --- the read side ---------------------------------------------------------------------
    def metrics(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        """``/metrics`` as {(sample name, sorted labels): value}."""
        from django.test import Client

        response = Client().get("/metrics")
        assert response.status_code == 200
        out = {}
        for family in text_string_to_metric_families(response.content.decode()):
            for sample in family.samples:
                out[sample.name, tuple(sorted(sample.labels.items()))] = sample.value
        return out

    def metric(self, name: str, **labels: str) -> float | None:
        want = tuple(sorted({"cluster": CLUSTER, **labels}.items()))
        return self.metrics().get((name, want))

    def gauge(
        self, family: str, topic: str, partition: int, group: str = "default-group"
    ) -> float | None:
        """A partition's gauge in ``/metrics``: ``lag``, ``pending``, ``oldest_pending_seconds``."""
        name = f"redis_streaming_mq_console_{family}"
        return self.metric(name, topic=topic, group=group, partition=str(partition))

    def group_statuses(self) -> dict[tuple[str, str], str]:
        """(topic, group) -> the status ``/metrics`` exports as 1."""
        out = {}
        for (name, labels), value in self.metrics().items():
            if name == "redis_streaming_mq_console_group_status" and value == 1:
                d = dict(labels)
                out[d["topic"], d["group"]] = d["status"]
        return out

    def partition_statuses(self, topic: str, group: str) -> dict[int, str]:
        out = {}
        for (name, labels), value in self.metrics().items():
            d = dict(labels)
            if (
                name == "redis_streaming_mq_console_partition_status"
                and value == 1
                and (d["topic"], d["group"]) == (topic, group)
            ):
                out[int(d["partition"])] = d["status"]
        return out

    def status(self, topic: str, group: str = "default-group") -> str | None:
        return self.group_statuses().get((topic, group))

    def timeline(self, **filters: str) -> list[dict[str, Any]]:
        """The cluster's timeline events, newest first (``manage.py timeline --json``)."""
        from django.core.management import call_command

        args = ["--cluster", CLUSTER, "--json", "--limit", "500"]
        for key, value in filters.items():
            args += [f"--{key}", value]
        out = StringIO()
        call_command("timeline", *args, stdout=out)
        events: list[dict[str, Any]] = json.loads(out.getvalue())["events"]
        return events

    def opened(self) -> list[str]:
        return self.receiver.ids("opened")

    def resolved(self) -> list[str]:
        return self.receiver.ids("resolved")

    def assert_only_alerts(self, *expected: str) -> None:
        """No alert opened during the drill but ``expected`` (ids "rule:entity")."""
        others = sorted(set(self.opened()) - set(expected))
        assert not others, f"unexpected alerts opened: {others}: {self.receiver.events}"


def wait_for(predicate: Callable[[], Any], *, timeout: float = 10.0, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)
    return value
