"""What the stages of a collector pass hand each other around the derive stage: the rules
it derives with (thresholds and windows, from the settings: :func:`pass_rules`), the pass's
context (cluster, previous state, rules, time), where its series points go
(:class:`Sender`) and what it gives the write end (:class:`Outcome`). :mod:`.passes` makes
the first three and writes the last, :mod:`.derive` reads them and makes it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from django.conf import settings

from dashboard.alerts import AlertThresholds, AlertTransition
from dashboard.status import Thresholds
from mqcore.models import ClusterSnapshot

__all__ = ["Outcome", "PassContext", "PassRules", "Previous", "Sender", "pass_rules"]

Previous = Mapping[str, Any]  # the store's state_get: state, lease_state, health, alerts


@dataclass(frozen=True, slots=True)
class PassRules:
    """The settings a pass derives with."""

    status: Thresholds
    alerts: AlertThresholds
    per_topic: Mapping[str, Mapping[str, Any]]
    dlq_window_ms: int
    interval_ms: int
    restart_hold_ms: int
    dlq_burst: int


def pass_rules() -> PassRules:
    """The status and alert thresholds and the other rules of a pass, from the settings."""
    samples = max(1, int(settings.STATUS_WINDOW_SAMPLES))
    interval_s = max(1, int(settings.COLLECT_INTERVAL_S))
    stop_s = float(settings.STATUS_STOP_AFTER_S) or samples * interval_s
    return PassRules(
        status=Thresholds(
            window_samples=samples,
            allowed_lag=int(settings.STATUS_ALLOWED_LAG),
            stop_after_ms=int(stop_s * 1000),
        ),
        alerts=AlertThresholds(
            status_for_ms=int(settings.ALERT_STATUS_FOR_S) * 1000,
            dlq_growth=int(settings.ALERT_DLQ_GROWTH),
            oldest_pending_ms=int(settings.ALERT_OLDEST_PENDING_S) * 1000,
            checkpoint_age_ms=int(settings.ALERT_CHECKPOINT_AGE_S) * 1000,
            collector_failures=int(settings.ALERT_COLLECTOR_FAILURES),
            memory_growth_bytes=int(settings.ALERT_MEMORY_GROWTH_MB) * 2**20,
            memory_growth_share=float(settings.ALERT_MEMORY_GROWTH_SHARE),
        ),
        per_topic=settings.STATUS_TOPIC_THRESHOLDS,
        dlq_window_ms=int(settings.DLQ_GROWTH_WINDOW_S) * 1000,
        interval_ms=interval_s * 1000,
        restart_hold_ms=int(settings.ALERT_RESTART_HOLD_S) * 1000,
        dlq_burst=int(settings.INCIDENT_DLQ_BURST),
    )


@dataclass(frozen=True, slots=True)
class PassContext:
    """What every derive step of one pass knows: the cluster, the previous pass's state (the
    store's ``state_get``), the rules, the pass's time."""

    cluster: str
    previous: Previous
    rules: PassRules
    now_ms: int


class Sender(Protocol):
    """Where a pass's series points go as they are derived (the store's
    :class:`~dashboard.store.series.PassPoints`)."""

    def send(self, triples: Iterable[tuple[str, str, float]]) -> None: ...


@dataclass
class Outcome:
    """What a pass stores besides its series points (``snapshot`` None: the read failed)."""

    snapshot: ClusterSnapshot | None
    state: dict[str, Any]
    lease_state: dict[str, Any] | None
    incidents: list[dict[str, Any]]
    health: dict[str, Any]
    transition: AlertTransition
    error: str | None = None
    changed: list[str] = field(default_factory=list)  # alert ids opened or resolved
