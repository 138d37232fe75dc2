"""Status and alert thresholds of a pass, read from the settings."""

from __future__ import annotations

from django.conf import settings

from dashboard.alerts import AlertThresholds
from dashboard.status import Thresholds

__all__ = ["alert_thresholds", "status_thresholds"]


def status_thresholds() -> Thresholds:
    samples = max(1, int(settings.STATUS_WINDOW_SAMPLES))
    stop_s = float(settings.STATUS_STOP_AFTER_S) or samples * int(settings.COLLECT_INTERVAL_S)
    return Thresholds(
        window_samples=samples,
        allowed_lag=int(settings.STATUS_ALLOWED_LAG),
        stop_after_ms=int(stop_s * 1000),
    )


def alert_thresholds() -> AlertThresholds:
    return AlertThresholds(
        status_for_ms=int(settings.ALERT_STATUS_FOR_S) * 1000,
        dlq_growth=int(settings.ALERT_DLQ_GROWTH),
        oldest_pending_ms=int(settings.ALERT_OLDEST_PENDING_S) * 1000,
        checkpoint_age_ms=int(settings.ALERT_CHECKPOINT_AGE_S) * 1000,
        collector_failures=int(settings.ALERT_COLLECTOR_FAILURES),
        memory_growth_bytes=int(settings.ALERT_MEMORY_GROWTH_MB) * 2**20,
        memory_growth_share=float(settings.ALERT_MEMORY_GROWTH_SHARE),
    )
