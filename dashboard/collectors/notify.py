"""Delivery of a pass's alert opens/closes (:func:`dashboard.collectors.passes.alert_events`)
to the webhooks, each in its format (:mod:`dashboard.collectors.webhook_formats`).

The webhooks: ``ALERT_WEBHOOK_URL`` (one generic JSON webhook, as it always was) and
``ALERT_WEBHOOKS``, a JSON list of ``{"url", "format", "routing_key" | "routing_key_env"}``.
:func:`webhooks_check` refuses a list that cannot work at start (``manage.py check``);
:func:`alert_notify` posts to every webhook in turn and one that fails (after its retries)
does not keep the event from the others. URLs and routing keys are secrets: logs and
errors name a webhook by its place in the list, its format and its host only.
"""

from __future__ import annotations

import json
import logging
import os
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.checks import CheckMessage, Error, register
from django.core.exceptions import ImproperlyConfigured

from dashboard.collectors.webhook_formats import (
    FORMATS,
    json_body,
    pagerduty_body,
    slack_body,
)

__all__ = ["Webhook", "alert_notify", "alert_webhooks", "webhook_post", "webhooks_check"]

log = logging.getLogger(__name__)

PAGERDUTY_EVENTS_URL = "https://events.pagerduty.com/v2/enqueue"
ENTRY_KEYS = frozenset({"url", "format", "routing_key", "routing_key_env"})


@dataclass(frozen=True)
class Webhook:
    """One webhook: where to, in which format, and PagerDuty's routing key (never shown)."""

    url: str = field(repr=False)
    format: str = "json"
    routing_key: str = field(default="", repr=False)
    label: str = "ALERT_WEBHOOK_URL"  # how logs and errors name it

    def body(self, event: Mapping[str, Any]) -> dict[str, Any]:
        if self.format == "slack":
            return slack_body(event)
        if self.format == "pagerduty":
            return pagerduty_body(event, self.routing_key)
        return json_body(event)


def alert_webhooks() -> list[Webhook]:
    """Every configured webhook; ImproperlyConfigured (naming the entry, never its URL or
    key) when ALERT_WEBHOOKS cannot be read or an entry cannot work."""
    hooks: list[Webhook] = []
    url = str(getattr(settings, "ALERT_WEBHOOK_URL", "") or "")
    if url:
        _check_url(url, "ALERT_WEBHOOK_URL")
        hooks.append(Webhook(url))
    raw = getattr(settings, "ALERT_WEBHOOKS", "") or []
    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw.strip() else []
        except json.JSONDecodeError as exc:
            raise ImproperlyConfigured(
                f"ALERT_WEBHOOKS is not valid JSON ({exc.msg} at character {exc.pos})"
            ) from None
    if not isinstance(raw, list):
        raise ImproperlyConfigured('ALERT_WEBHOOKS must be a JSON list of {"url", "format"}')
    hooks.extend(_entry(entry, f"ALERT_WEBHOOKS[{index}]") for index, entry in enumerate(raw))
    return hooks


def _entry(entry: Any, label: str) -> Webhook:
    if not isinstance(entry, dict):
        raise ImproperlyConfigured(f'{label} must be an object like {{"url": ..., "format": ...}}')
    unknown = sorted(str(key)[:40] for key in entry if key not in ENTRY_KEYS)
    if unknown:
        raise ImproperlyConfigured(
            f"{label}: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(ENTRY_KEYS))})"
        )
    fmt = entry.get("format", "json")
    if fmt not in FORMATS:
        raise ImproperlyConfigured(
            f"{label}: format {str(fmt)[:40]!r} is not one of {', '.join(FORMATS)}"
        )
    label = f"{label} ({fmt})"
    key = _routing_key(entry, label)
    if fmt == "pagerduty" and not key:
        raise ImproperlyConfigured(
            f"{label} needs a routing key: routing_key_env (the name of an environment "
            "variable holding it) or routing_key"
        )
    if fmt != "pagerduty" and key:
        raise ImproperlyConfigured(f"{label}: a routing key is for the pagerduty format only")
    url = entry.get("url", PAGERDUTY_EVENTS_URL if fmt == "pagerduty" else "")
    if not isinstance(url, str) or not url:
        raise ImproperlyConfigured(f"{label} needs a url")
    _check_url(url, label)
    return Webhook(url, fmt, key, label)


def _routing_key(entry: Mapping[str, Any], label: str) -> str:
    if "routing_key_env" in entry:
        name = entry["routing_key_env"]
        if not isinstance(name, str) or not name:
            raise ImproperlyConfigured(
                f"{label}: routing_key_env must name an environment variable"
            )
        key = os.environ.get(name, "")
        if not key:
            raise ImproperlyConfigured(
                f"{label}: the environment variable {name[:80]} (routing_key_env) is unset or empty"
            )
        return key
    key = entry.get("routing_key", "")
    if not isinstance(key, str):
        raise ImproperlyConfigured(f"{label}: routing_key must be a string")
    return key


def _check_url(url: str, label: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ImproperlyConfigured(f"{label} must be an http(s) URL")


@register()
def webhooks_check(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """``manage.py check`` (and every start) refuses alert webhooks that cannot work."""
    try:
        alert_webhooks()
    except ImproperlyConfigured as exc:
        return [
            Error(
                str(exc),
                hint='e.g. ALERT_WEBHOOKS=\'[{"url": "https://hooks.slack.com/services/...", '
                '"format": "slack"}, {"format": "pagerduty", "routing_key_env": "PD_KEY"}]\'',
                id="opsdash.E120",
            )
        ]
    return []


def alert_notify(event: Mapping[str, Any]) -> bool:
    """Send one alert open/close to every webhook (no-op when none). True when every one
    took it; a webhook that fails is logged and the others are still sent to."""
    try:
        hooks = alert_webhooks()
    except ImproperlyConfigured as exc:
        log.error("alert webhooks not sent: %s", exc)
        return False
    delivered = [_send(hook, event) for hook in hooks]
    return bool(delivered) and all(delivered)


def _send(hook: Webhook, event: Mapping[str, Any]) -> bool:
    try:
        return webhook_post(hook.url, hook.body(event), label=hook.label)
    except Exception as exc:  # one webhook never keeps the event from the next
        log.warning("alert webhook %s failed: %s", hook.label, type(exc).__name__)
        return False


def webhook_post(
    url: str,
    event: Mapping[str, Any],
    *,
    attempts: int = 3,
    backoff_s: float = 0.5,
    timeout_s: float = 5.0,
    label: str = "ALERT_WEBHOOK_URL",
) -> bool:
    """POST ``event`` as JSON; retry on network errors, 5xx and 429. True when delivered.

    Only http(s) URLs are accepted; the URL (it may carry a token) is never logged.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"{label} must be an http(s) URL")
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
            if exc.code < 500 and exc.code != 429:
                log.warning(
                    "alert webhook %s to %s refused: HTTP %s", label, parts.hostname, exc.code
                )
                return False
        except (urllib.error.URLError, OSError) as exc:
            log.warning(
                "alert webhook %s to %s failed (attempt %d): %s",
                label,
                parts.hostname,
                attempt,
                type(exc).__name__,
            )
        if attempt < attempts:
            time.sleep(backoff_s * 2 ** (attempt - 1))
    return False
