"""``make demo-soak DURATION=30m``: the demo's workload, headless, for a while; fails on any
alert that no scheduled demo incident explains.

It runs ``make demo``'s supervisor (:mod:`scripts.demo`) on fresh data (``var/soak``, ports
of its own), with the console's alert webhook pointed at a receiver here, for ``DURATION``
from the moment the demo is up; then it stops the demo and writes a report
(``var/soak/report.txt`` and ``report.json``) listing every alert the console opened, when,
and its cause. The causes the demo schedules (:func:`cause_of`):

- the bounce consumer (``orders-bounce``) crashes with SIGKILL and comes back: a ``status``,
  ``oldest_pending`` or ``rewind`` alert of ``orders`` from its crash until its down time,
  the status hold and a margin have passed;
- the pipeline kill (the Spark pipeline's forced restart): a ``checkpoint_age`` or
  ``checkpoint_failed`` alert of the pipeline, or a ``status`` alert of its group, after it;
- the poison messages every producer sends (``DEMO_POISON_SHARE``): ``dlq_growth`` of a demo
  topic, at any time.

Anything else is unexplained: the report says so and the exit code is 1 (2 when the demo
did not come up). The supervisor's own lines go to ``var/soak/demo.log``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pipelines import pipeline_id
from scripts.demo_settings import PROJECT_ROOT, PYTHON, DemoSettings
from scripts.demo_workload import TOPICS
from scripts.embedded import find_free_port
from scripts.webhook_server import WebhookServer

BOUNCE = "orders-bounce"
PIPELINE = pipeline_id("order_totals", "redis")  # the demo's Spark pipeline, also its group
PIPELINE_GROUP = f"orders/{PIPELINE}"
STATUS_HOLD_S = 300  # ALERT_STATUS_FOR_S's default: the demo keeps it
MARGIN_S = 120  # passes, the lease TTL, the drain after a consumer is back
START_TIMEOUT_S = 300.0
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*$")


def parse_duration(text: str) -> float:
    """Seconds of ``90s``, ``2m``, ``1.5h`` or a bare number of seconds; ValueError else."""
    match = _DURATION.match(text)
    if not match or float(match.group(1)) <= 0:
        raise ValueError(f"a duration looks like 90s, 2m or 1h, got {text!r}")
    return float(match.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[match.group(2)]


@dataclass(frozen=True)
class Incident:
    """A scheduled demo incident, seen in the supervisor's output: ``kind`` bounce or
    pipeline_kill, ``at_s`` seconds since the soak started."""

    kind: str
    at_s: float
    line: str


@dataclass
class Alert:
    """One alert the console opened (its webhook), and when it resolved if it did."""

    id: str
    rule: str
    entity: str
    severity: str
    message: str
    opened_s: float
    resolved_s: float | None = None
    cause: str = ""


def incident_of(line: str, at_s: float) -> Incident | None:
    """The incident a supervisor line announces (its scheduled actions' labels), or None."""
    source, bar, text = line.partition("|")
    if not bar or source.strip() != "demo":  # the supervisor's own lines only
        return None
    text = text.strip()
    if text.startswith(f"{BOUNCE} crashes ("):
        return Incident("bounce", at_s, text)
    if text.startswith("forced restart of pipeline ("):
        return Incident("pipeline_kill", at_s, text)
    return None


def cause_of(alert: Alert, incidents: Sequence[Incident], settings: DemoSettings) -> str:
    """Which scheduled incident explains ``alert``; "" when none does."""
    topic = alert.entity.split("/", 1)[0]
    if alert.rule == "dlq_growth" and alert.entity in TOPICS:
        return f"poison messages: every producer sends {settings.poison_share:.0%} poison"
    for incident in reversed(incidents):
        if incident.at_s > alert.opened_s:
            continue
        since = alert.opened_s - incident.at_s
        if incident.kind == "bounce":
            within = settings.bounce_down_s + STATUS_HOLD_S + MARGIN_S
            if (
                alert.rule in ("status", "oldest_pending", "rewind")
                and topic == "orders"
                and since <= within
            ):
                return f"the bounce consumer {BOUNCE} crashed {since:.0f} s before"
        if incident.kind == "pipeline_kill":
            pipeline = alert.rule in ("checkpoint_age", "checkpoint_failed")
            if (pipeline and alert.entity == PIPELINE) or (
                alert.rule == "status" and alert.entity == PIPELINE_GROUP
            ):
                return f"the pipeline kill {since:.0f} s before"
    return ""


class Receiver:
    """The alert webhook: every opened and resolved alert, timed from ``started``."""

    def __init__(self, started: float) -> None:
        self.alerts: dict[str, Alert] = {}
        self.order: list[str] = []
        self.lock = threading.Lock()
        self.server = WebhookServer(
            lambda event: self.record(event, time.monotonic() - started), path="/soak"
        )
        self.url = self.server.url

    def record(self, event: Mapping[str, Any], at_s: float) -> None:
        alert = event.get("alert") if isinstance(event, Mapping) else None
        if not isinstance(alert, Mapping):
            return
        alert_id = str(alert.get("id") or "")
        with self.lock:
            if event.get("event") == "opened":
                key = f"{alert_id}#{len(self.order)}"
                self.order.append(key)
                self.alerts[key] = Alert(
                    alert_id,
                    str(alert.get("rule") or ""),
                    str(alert.get("entity") or ""),
                    str(alert.get("severity") or ""),
                    str(alert.get("message") or "")[:500],
                    round(at_s, 1),
                )
            elif event.get("event") == "resolved":
                for key in reversed(self.order):
                    found = self.alerts[key]
                    if found.id == alert_id and found.resolved_s is None:
                        found.resolved_s = round(at_s, 1)
                        break

    def opened(self) -> list[Alert]:
        with self.lock:
            return [self.alerts[k] for k in self.order]

    def close(self) -> None:
        self.server.close()


def _pump(
    demo: subprocess.Popen[bytes],
    log: Path,
    started: float,
    seen: list[Incident],
    up: threading.Event,
) -> None:
    """Copy the demo's output to ``log``; note the incidents in ``seen``, the banner in ``up``."""
    assert demo.stdout is not None
    with log.open("w") as out:
        for raw in iter(demo.stdout.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip()
            out.write(line + "\n")
            out.flush()
            at = time.monotonic() - started
            incident = incident_of(line, at)
            if incident is not None:
                seen.append(incident)
            elif "| console: http" in line:
                up.set()


def report(
    alerts: Sequence[Alert], incidents: Sequence[Incident], duration_s: float, var_dir: Path
) -> list[str]:
    """The report's lines (also written to ``var_dir``), every alert with its cause."""
    unexplained = [a for a in alerts if not a.cause]
    lines = [
        f"demo soak: {duration_s / 60:.1f} min, {len(alerts)} alerts opened, "
        f"{len(unexplained)} unexplained",
        "scheduled incidents:",
        *(f"  {i.at_s:7.0f} s  {i.line}" for i in incidents),
        "alerts (opened at, resolved at, seconds since the start):",
    ]
    for a in alerts:
        resolved = "open" if a.resolved_s is None else f"{a.resolved_s:.0f} s"
        lines.append(f"  {a.opened_s:7.0f} s -> {resolved:>7}  {a.id} [{a.severity}] {a.message}")
        lines.append(f"            cause: {a.cause or 'UNEXPLAINED'}")
    (var_dir / "report.txt").write_text("\n".join(lines) + "\n")
    data = {
        "duration_s": duration_s,
        "incidents": [asdict(i) for i in incidents],
        "alerts": [asdict(a) for a in alerts],
        "unexplained": len(unexplained),
    }
    (var_dir / "report.json").write_text(json.dumps(data, indent=2))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.demo_soak", description=__doc__)
    parser.add_argument("--duration", default="30m", help="how long, e.g. 30m, 2m, 90s")
    parser.add_argument("--var-dir", default=str(PROJECT_ROOT / "var" / "soak"))
    args = parser.parse_args(argv)
    try:
        duration_s = parse_duration(args.duration)
    except ValueError as exc:
        parser.error(str(exc))
    var_dir = Path(args.var_dir).resolve()
    shutil.rmtree(var_dir, ignore_errors=True)  # fresh data: the soak's alerts are its own
    var_dir.mkdir(parents=True)
    started = time.monotonic()
    receiver = Receiver(started)
    env = {
        **os.environ,
        "DEMO_VAR_DIR": str(var_dir),
        "WEB_PORT": str(find_free_port()),
        "REDIS_PORT": str(find_free_port()),
        "ALERT_WEBHOOK_URL": receiver.url,
        "DEMO_REMINDER_EVERY_S": "0",
    }
    settings = DemoSettings.from_env(env)
    demo = subprocess.Popen(
        [PYTHON, "-m", "scripts.demo"],
        cwd=PROJECT_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    seen: list[Incident] = []
    up = threading.Event()
    pump = threading.Thread(target=_pump, args=(demo, var_dir / "demo.log", started, seen, up))
    pump.start()
    print(f"demo soak: {args.duration}; the demo's output in {var_dir / 'demo.log'}", flush=True)
    code = 0
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not up.wait(0.5):
            if demo.poll() is not None or time.monotonic() > deadline:
                print("demo soak: the demo did not come up (see demo.log)", flush=True)
                return 2
        print(f"demo soak: the demo is up; soaking for {duration_s:.0f} s", flush=True)
        end = time.monotonic() + duration_s
        while time.monotonic() < end:
            if demo.poll() is not None:
                print("demo soak: the demo stopped early (see demo.log)", flush=True)
                code = 2
                break
            time.sleep(1.0)
    finally:
        if demo.poll() is None:
            demo.send_signal(signal.SIGTERM)
            try:
                demo.wait(timeout=settings.stop_grace_s + 60)
            except subprocess.TimeoutExpired:
                os.killpg(demo.pid, signal.SIGKILL)
                demo.wait()
        pump.join(timeout=10)
        receiver.close()
    incidents = list(seen)
    alerts = receiver.opened()
    for alert in alerts:
        alert.cause = cause_of(alert, incidents, settings)
    lines = report(alerts, incidents, duration_s, var_dir)
    print("\n".join(lines), flush=True)
    if code == 0 and any(not a.cause for a in alerts):
        code = 1
    print(f"demo soak: report in {var_dir / 'report.txt'}", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
