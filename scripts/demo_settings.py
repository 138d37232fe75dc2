"""The demo's knobs, where it runs from, and the error for a demo that cannot start.

Every knob is a field of :class:`DemoSettings`; each field names the environment
variable that overrides it.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable


class DemoSetupError(RuntimeError):
    """Raised when the demo cannot start (port taken, no redis-server, a failed step)."""


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
    # one line saying where the console is and how to log in, this often (0: never)
    reminder_every_s: float = field(default=300.0, metadata=_env("DEMO_REMINDER_EVERY_S"))
    # producers print how much they sent this often
    report_every_s: float = field(default=300.0, metadata=_env("DEMO_REPORT_EVERY_S"))
    bounce_every_s: float = field(default=300.0, metadata=_env("DEMO_BOUNCE_EVERY_S"))
    bounce_down_s: float = field(default=60.0, metadata=_env("DEMO_BOUNCE_DOWN_S"))
    # the consumer that joins and leaves (lease timeline history)
    churn_on_s: float = field(default=150.0, metadata=_env("DEMO_CHURN_ON_S"))
    churn_off_s: float = field(default=120.0, metadata=_env("DEMO_CHURN_OFF_S"))
    # one forced kill of the Spark pipeline so the checkpoints page shows a restore
    pipeline_restart_after_s: float = field(default=240.0, metadata=_env("DEMO_PIPELINE_KILL_S"))
    stop_grace_s: float = field(default=10.0, metadata=_env("DEMO_STOP_GRACE_S"))
    # when the demo runs as root, the Celery worker drops to this user (Celery's --uid/--gid)
    worker_user: str = field(default="nobody", metadata=_env("DEMO_WORKER_USER"))

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
