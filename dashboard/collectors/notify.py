"""Alert opens/closes of a pass as events, and their delivery to the webhook."""

from __future__ import annotations

import json
import logging
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings

from dashboard.alert_mutes import mute_applies

__all__ = ["alert_events", "alert_notify", "webhook_post"]

log = logging.getLogger(__name__)


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


def webhook_post(
    url: str,
    event: Mapping[str, Any],
    *,
    attempts: int = 3,
    backoff_s: float = 0.5,
    timeout_s: float = 5.0,
) -> bool:
    """POST ``event`` as JSON; retry on network errors and 5xx. True when delivered.

    Only http(s) URLs are accepted; the URL (it may carry a token) is never logged.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise ValueError("ALERT_WEBHOOK_URL must be an http(s) URL")
    body = json.dumps(event, default=str).encode()
    for attempt in range(1, attempts + 1):
        request = urllib.request.Request(  # noqa: S310 - scheme checked above
            url, data=body, method="POST", headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310
                if response.status < 300:
                    return True
        except urllib.error.HTTPError as exc:
            if exc.code < 500:
                log.warning("alert webhook to %s refused: HTTP %s", parts.hostname, exc.code)
                return False
        except (urllib.error.URLError, OSError) as exc:
            log.warning(
                "alert webhook to %s failed (attempt %d): %s",
                parts.hostname,
                attempt,
                type(exc).__name__,
            )
        if attempt < attempts:
            time.sleep(backoff_s * 2 ** (attempt - 1))
    return False
