"""Delivery of a pass's alert opens/closes (:func:`dashboard.collectors.passes.alert_events`)
to the webhook."""

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

__all__ = ["alert_notify", "webhook_post"]

log = logging.getLogger(__name__)


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
