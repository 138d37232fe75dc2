"""The bodies an alert open/close is POSTed as, one per webhook format.

* ``json``: the event as the collector made it, with ``"source": "opsdash"`` (the shape
  every webhook had before formats existed; kept unchanged);
* ``slack``: a Slack incoming webhook's Block Kit message (``blocks``) with a ``text``
  fallback for notifications;
* ``pagerduty``: a PagerDuty Events API v2 event: ``trigger`` when the alert opens,
  ``resolve`` with the same ``dedup_key`` when it resolves.

Topic, group and consumer names reach the alert's entity and message, and anyone who can
create a topic chooses them: Slack's control characters ``&``, ``<`` and ``>`` are
escaped (no ``<!channel>`` or link can be smuggled in) and every text is cut to a size
the receiver accepts.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from mqcore.clock import iso_from_ms

__all__ = [
    "FORMATS",
    "json_body",
    "pagerduty_body",
    "pagerduty_dedup_key",
    "slack_body",
    "slack_escape",
]

FORMATS = ("json", "slack", "pagerduty")

# Slack: a section's text is at most 3000 characters, the fallback text is cut sooner.
SLACK_SECTION_MAX = 3000
SLACK_TEXT_MAX = 500
SLACK_NAME_MAX = 200
# PagerDuty Events v2: summary <= 1024, source and dedup_key <= 255.
PD_SUMMARY_MAX = 1024
PD_SOURCE_MAX = 255
PD_DEDUP_MAX = 255
PD_DETAIL_MAX = 2048
PD_SEVERITIES = ("critical", "error", "warning", "info")


def cut(text: Any, limit: int) -> str:
    """``text`` as a string of at most ``limit`` characters (an ellipsis marks a cut)."""
    value = "" if text is None else str(text)
    return value if len(value) <= limit else value[: limit - 1] + "…"


def json_body(event: Mapping[str, Any]) -> dict[str, Any]:
    return {"source": "opsdash", **event}


SLACK_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def slack_escape(text: Any, limit: int) -> str:
    """``text`` escaped for Slack mrkdwn (``&``, ``<``, ``>``) in at most ``limit``
    characters, cut between characters, never inside an escape (an ellipsis marks a cut)."""
    value = "" if text is None else str(text)
    pieces: list[str] = []
    size = 0
    for index, char in enumerate(value):
        piece = SLACK_ESCAPES.get(char, char)
        last = index == len(value) - 1
        if size + len(piece) > (limit if last else limit - 1):
            pieces.append("…")
            break
        pieces.append(piece)
        size += len(piece)
    return "".join(pieces)


def slack_body(event: Mapping[str, Any]) -> dict[str, Any]:
    alert = event.get("alert") or {}
    opened = event.get("event") == "opened"
    severity = str(alert.get("severity") or "warning")
    shown_severity = slack_escape(severity, 20)
    rule = slack_escape(alert.get("rule"), SLACK_NAME_MAX)
    entity = slack_escape(alert.get("entity"), SLACK_NAME_MAX)
    cluster = slack_escape(alert.get("cluster"), SLACK_NAME_MAX)
    message = slack_escape(alert.get("message"), SLACK_SECTION_MAX - 2 * SLACK_NAME_MAX - 100)
    if not opened:
        icon = ":white_check_mark:"
    elif severity == "critical":
        icon = ":rotating_light:"
    else:
        icon = ":warning:"
    title = "opened" if opened else "resolved"
    at_ms = alert.get("opened_at_ms") if opened else alert.get("resolved_at_ms")
    when = iso_from_ms(int(at_ms)) if isinstance(at_ms, int) else ""
    fallback = slack_escape(
        f"[{severity.upper()[:20]}] {title}: {alert.get('rule')} on {alert.get('entity')}: "
        f"{alert.get('message')}",
        SLACK_TEXT_MAX,
    )
    return {
        "text": fallback,
        "blocks": [
            {
                "type": "section",
                "text": {
                    "type": "mrkdwn",
                    "text": f"{icon} *Alert {title}: {rule}* ({shown_severity})\n"
                    f"*{entity}*\n{message}",
                },
            },
            {
                "type": "context",
                "elements": [
                    {"type": "mrkdwn", "text": f"cluster {cluster} · opsdash · {when}".strip()}
                ],
            },
        ],
    }


def pagerduty_dedup_key(alert: Mapping[str, Any]) -> str:
    """The same key for an alert's trigger and its resolve: ``opsdash/<cluster>/<alert id>``,
    or, when that is longer than PagerDuty takes, its start and a digest of the whole."""
    key = f"opsdash/{alert.get('cluster')}/{alert.get('id')}"
    if len(key) <= PD_DEDUP_MAX:
        return key
    digest = hashlib.sha256(key.encode()).hexdigest()
    return f"{key[: PD_DEDUP_MAX - len(digest) - 1]}#{digest}"


def pagerduty_body(event: Mapping[str, Any], routing_key: str) -> dict[str, Any]:
    alert = event.get("alert") or {}
    opened = event.get("event") == "opened"
    severity = str(alert.get("severity") or "")
    at_ms = alert.get("opened_at_ms") if opened else alert.get("resolved_at_ms")
    details = {
        name: cut(value, PD_DETAIL_MAX) if isinstance(value, str) else value
        for name, value in alert.items()
    }
    payload: dict[str, Any] = {
        "summary": cut(
            f"[{alert.get('cluster')}] {alert.get('rule')} on {alert.get('entity')}: "
            f"{alert.get('message')}",
            PD_SUMMARY_MAX,
        ),
        "severity": severity if severity in PD_SEVERITIES else "warning",
        "source": cut(f"opsdash cluster {alert.get('cluster')}", PD_SOURCE_MAX),
        "component": cut(alert.get("entity"), PD_SOURCE_MAX),
        "group": cut(alert.get("cluster"), PD_SOURCE_MAX),
        "class": cut(alert.get("rule"), PD_SOURCE_MAX),
        "custom_details": details,
    }
    if isinstance(at_ms, int):
        payload["timestamp"] = iso_from_ms(at_ms)
    return {
        "routing_key": routing_key,
        "event_action": "trigger" if opened else "resolve",
        "dedup_key": pagerduty_dedup_key(alert),
        "client": "opsdash",
        "payload": payload,
    }
