"""What audit details may hold (for the services that write them and the selectors that
read them): operators' text filters as a digest, and the topics they name.

Text filters (the ``text`` search and ``where`` expressions of exports, bulk replays and
the retry browser) run over payloads that may be sensitive, and every console user reads
the audit log: a filter is kept as ``{"hmac_sha256": ..., "len": N}`` (keyed by
``AUDIT_HMAC_KEY``; ``{"sha256": ..., "len": N}`` without a key), never as its value.
:func:`audit_filters` is applied when a row is written and :func:`shown_detail` when one
is read, so rows written before this rule show no value either.

:func:`named_topics` says which topics a row's details name, so scoped users read an
action only when every topic it names is visible to them.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterator, Mapping
from typing import Any

from django.conf import settings

from dashboard.alerts import alert_scope

__all__ = [
    "GLOBAL",
    "GLOBAL_EVENTS",
    "TEXT_FILTER_FIELDS",
    "audit_filters",
    "named_topics",
    "shown_detail",
    "text_digest",
]

TEXT_FILTER_FIELDS = frozenset({"text", "where", "expr", "q"})
FILTER_KEYS = ("filter", "filters")  # where services put a row's filters in its details
TOPIC_KEYS = frozenset({"topic", "target_topic"})
GLOBAL = ""  # the named "topic" of an action only unscoped users may read
# access administration and tokens: about users and every topic, not about one topic
GLOBAL_EVENTS = frozenset({"role.change", "role.sync", "token.issue", "token.revoke"})
DENIED_EVENT = "access.denied"
MAX_DEPTH = 4


def text_digest(value: str) -> dict[str, Any]:
    """A text filter as its digest and length (keyed by the audit key when there is one,
    so a short guessable value cannot be confirmed by whoever reads the log)."""
    raw = value.encode("utf-8")
    key = str(getattr(settings, "AUDIT_HMAC_KEY", "") or "").encode()
    if key:
        return {"hmac_sha256": hmac.new(key, raw, hashlib.sha256).hexdigest(), "len": len(value)}
    return {"sha256": hashlib.sha256(raw).hexdigest(), "len": len(value)}


def audit_filters(filters: Mapping[str, Any]) -> dict[str, Any]:
    """``filters`` for an audit row: empty ones left out, text filters as a digest."""
    out: dict[str, Any] = {}
    for name, value in filters.items():
        if value is None or value == "":
            continue
        is_text = name in TEXT_FILTER_FIELDS and isinstance(value, str)
        out[name] = text_digest(value) if is_text else value
    return out


def shown_detail(detail: Mapping[str, Any]) -> dict[str, Any]:
    """``detail`` as shown to readers: text filters of older rows as their digest too."""
    shown = dict(detail)
    for key in FILTER_KEYS:
        if isinstance(shown.get(key), Mapping):
            shown[key] = audit_filters(shown[key])
    return shown


def _walk(value: Any, depth: int = 0) -> Iterator[tuple[str, Any]]:
    if depth > MAX_DEPTH:
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield str(key), item
            yield from _walk(item, depth + 1)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _walk(item, depth + 1)


def named_topics(event_type: str, detail: Mapping[str, Any] | None, *, topic: str = "") -> set[str]:
    """The topics a row of ``topic`` names besides its own: ``topic`` and ``target_topic``
    values in ``detail`` at any depth, the topic of an ``alert`` id; plus :data:`GLOBAL`
    for access changes, refusals of topic-less actions, and alerts whose rule names no
    topic the row could be checked against (pipelines)."""
    found: set[str] = set()
    if event_type in GLOBAL_EVENTS or (event_type == DENIED_EVENT and not topic):
        found.add(GLOBAL)
    for key, value in _walk(detail or {}):
        if key in TOPIC_KEYS and isinstance(value, str) and value:
            found.add(value[:200])
        elif key == "alert" and isinstance(value, str) and value:
            rule, _, entity = value.partition(":")
            scope = alert_scope({"rule": rule, "entity": entity})
            if scope is None:
                found.add(GLOBAL)
            elif scope[1]:
                found.add(scope[1][:200])
    if topic:
        found.discard(topic)
    return found
