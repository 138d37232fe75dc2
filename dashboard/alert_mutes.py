"""Silences and acknowledgements of open alerts: their durations and when one applies.

A *silence* mutes an alert id (``rule:entity``) for its duration, across a close
and a re-open; an *acknowledgement* mutes the one opening it was given for (it
stops applying when that alert resolves, even before its duration ends). While
one applies the alert stays listed, marked, and the webhook is not called for it.

They live in the console store (Redis), one key per alert id whose expiry is the
duration: the collector pass, which decides what the webhook is told, already
reads the console store where the alerts themselves live, and an expiring key
lifts a silence on time without a sweeper. The durable record of who muted what,
when and why is the audit log (SQL).

Nothing here does I/O: :mod:`dashboard.services.alert_mutes` writes them,
:mod:`dashboard.selectors.alerts` reads them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dashboard.alerts import alert_scope
from mqcore.clock import duration_s

__all__ = [
    "DURATION_CHOICES",
    "MAX_DURATION_S",
    "MIN_DURATION_S",
    "MUTE_KINDS",
    "alert_of_id",
    "duration_parse",
    "mute_applies",
    "mute_topic",
]

MUTE_KINDS = ("silence", "ack")
DURATION_CHOICES = ("15m", "1h", "4h", "24h")
MIN_DURATION_S = 60
MAX_DURATION_S = 7 * 86_400


def duration_parse(text: Any) -> int:
    """Seconds of a duration such as ``15m``, ``4h``, ``1d12h`` or ``90m``; ValueError otherwise."""
    try:
        seconds = duration_s(text)
    except ValueError:
        raise ValueError(
            "duration: a number of days, hours and minutes such as 15m, 1h, 4h, 24h or 1d12h"
        ) from None
    if not MIN_DURATION_S <= seconds <= MAX_DURATION_S:
        raise ValueError(
            f"duration: between {MIN_DURATION_S // 60} minute and {MAX_DURATION_S // 86_400} days"
        )
    return seconds


def mute_applies(mute: Mapping[str, Any] | None, alert: Mapping[str, Any], now_ms: int) -> bool:
    """Whether ``mute`` (a stored silence or acknowledgement) mutes ``alert`` now."""
    if not isinstance(mute, Mapping) or int(mute.get("until_ms") or 0) <= now_ms:
        return False
    if mute.get("kind") == "ack":
        return mute.get("opened_at_ms") == alert.get("opened_at_ms")
    return mute.get("kind") == "silence"


def mute_topic(alert: Mapping[str, Any]) -> str | None:
    """The topic whose scope decides who may silence or acknowledge ``alert`` (the
    ``silence`` permission on it), or None for an alert that names no topic (a collector,
    Redis or pipeline alert): muting that is a global action, for a grant without scope."""
    about = alert_scope(alert)
    return (about[1] or None) if about else None


def alert_of_id(alert_id: str) -> dict[str, str]:
    """The rule and entity an alert id (``rule:entity``) names, for an alert not open."""
    rule, _, entity = alert_id.partition(":")
    return {"id": alert_id, "rule": rule, "entity": entity}
