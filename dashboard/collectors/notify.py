"""Alert opens/closes of a pass as events, and their delivery to the webhook."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings

from dashboard.alert_mutes import mute_applies
from dashboard.alerts import webhook_post

__all__ = ["alert_events", "alert_notify"]


def alert_events(
    opened: list[dict[str, Any]],
    resolved: list[dict[str, Any]],
    *,
    mutes: Mapping[str, Mapping[str, Any]] | None = None,
    now_ms: int = 0,
) -> list[dict[str, Any]]:
    """The events a pass reports: one per alert opened, then one per alert resolved,
    leaving out the alerts a silence or acknowledgement in ``mutes`` (alert id -> mute) mutes."""
    mutes = mutes or {}

    def loud(alert: Mapping[str, Any]) -> bool:
        return not mute_applies(mutes.get(str(alert.get("id"))), alert, now_ms)

    return [{"event": "opened", "alert": a} for a in opened if loud(a)] + [
        {"event": "resolved", "alert": a} for a in resolved if loud(a)
    ]


def alert_notify(event: Mapping[str, Any]) -> bool:
    """Send one alert open/close to ALERT_WEBHOOK_URL (no-op when unset). True when delivered."""
    url = str(settings.ALERT_WEBHOOK_URL or "")
    if not url:
        return False
    return webhook_post(url, {"source": "opsdash", **event})
