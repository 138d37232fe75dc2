"""Actions taken outside the console, written by mqcore to a bounded event stream in Redis.

The console audits what its users do; an operator with the mqcore CLI, or a program with the
library, moves group positions, trims topics, replays and purges dead letters without it.
:meth:`OutsideEvents.record` writes each such action to one stream
(:meth:`~mqcore.keys.KeySpace.outside_events`) with who did it, what it did (a small JSON
object: the target, the counts) and why, so the console can show it on its timeline and
audit view, marked "outside the console". The CLI records its own actions (``--by``,
``--reason``); a program calls :meth:`~OutsideEvents.record` after the action succeeded.

The write is one script (``record_outside_event.lua``): it looks for the event's token among
the newest entries and adds the entry only when it is not there, so a write sent again after
a lost reply adds nothing; ``XADD ... MAXLEN ~`` keeps the stream at about ``max_events``
entries (:data:`DEFAULT_MAX_EVENTS`). Bad input (an unknown action, a field too long) raises
:class:`~mqcore.errors.InvalidArgumentError` and writes nothing.
"""

from __future__ import annotations

import getpass
import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from mqcore import clock
from mqcore.boundary import redis_errors
from mqcore.codec import validate_id
from mqcore.config import MQConfig, RedisClient
from mqcore.errors import InvalidArgumentError
from mqcore.scripts import call_script

__all__ = [
    "ACTIONS",
    "DEFAULT_MAX_EVENTS",
    "OutsideEvent",
    "OutsideEvents",
    "default_who",
    "who_and_why",
]

# action -> what it is (the console shows the text)
ACTIONS = {
    "position.set": "moved a group's position",
    "topic.trim": "trimmed a topic's partitions or its DLQ",
    "dlq.replay": "replayed a dead letter",
    "dlq.purge": "purged a topic's DLQ",
}
DEFAULT_MAX_EVENTS = 10_000
TOKEN_SEARCH = 32  # newest entries searched for a token written already
MAX_WHO = 200
MAX_WHY = 1000
MAX_WHAT_BYTES = 8192
SOURCES = frozenset({"mqcore-cli", "mqcore"})


@dataclass(frozen=True, slots=True)
class OutsideEvent:
    """One recorded action (``id`` is its stream entry id)."""

    id: str
    at_ms: int
    action: str
    topic: str
    group: str | None
    who: str
    why: str
    source: str
    token: str
    what: dict[str, Any] = field(default_factory=dict)


def default_who() -> str:
    """The login of the user running this process ("unknown" when it has none)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def _text(name: str, value: object, limit: int) -> str:
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{name} must be text, got {type(value).__name__}")
    text = value.strip()
    if len(text) > limit:
        raise InvalidArgumentError(f"{name} is {len(text)} characters; at most {limit}")
    if any(ord(c) < 32 for c in text):
        raise InvalidArgumentError(f"{name} must be one line without control characters")
    return text


def who_and_why(who: object, why: object = "") -> tuple[str, str]:
    """``who`` and ``why`` as recorded; InvalidArgumentError when they cannot be (check them
    before the action, so that bad input changes nothing)."""
    who_text = _text("who", who, MAX_WHO)
    if not who_text:
        raise InvalidArgumentError("who: name the person or program that acted")
    return who_text, _text("why", why, MAX_WHY)


class OutsideEvents:
    """The outside-console event stream of one deployment."""

    def __init__(
        self,
        config: MQConfig,
        client: RedisClient | None = None,
        *,
        max_events: int = DEFAULT_MAX_EVENTS,
    ) -> None:
        if isinstance(max_events, bool) or not isinstance(max_events, int) or max_events < 1:
            raise InvalidArgumentError(f"max_events must be >= 1, got {max_events!r}")
        self.key = config.keys.outside_events()
        self.client: RedisClient = client if client is not None else config.client()
        self.max_events = max_events

    def record(
        self,
        action: str,
        *,
        topic: str,
        who: str,
        why: str = "",
        group: str | None = None,
        what: dict[str, Any] | None = None,
        source: str = "mqcore",
        token: str | None = None,
    ) -> str:
        """Write one event; returns its entry id (the existing one when ``token`` was
        written already). Call it after the action succeeded."""
        if action not in ACTIONS:
            raise InvalidArgumentError(f"unknown action {action!r}; one of {sorted(ACTIONS)}")
        if source not in SOURCES:
            raise InvalidArgumentError(f"unknown source {source!r}; one of {sorted(SOURCES)}")
        who_text, why_text = who_and_why(who, why)
        fields = {
            "at_ms": str(clock.now_ms()),
            "action": action,
            "topic": _text("topic", topic, MAX_WHO),
            "group": _text("group", group or "", MAX_WHO),
            "who": who_text,
            "why": why_text,
            "source": source,
            "what": json.dumps(what or {}, sort_keys=True, default=str),
        }
        if len(fields["what"].encode()) > MAX_WHAT_BYTES:
            raise InvalidArgumentError(f"what: at most {MAX_WHAT_BYTES} bytes of JSON")
        token_text = _text("token", token or uuid.uuid4().hex, 64)
        args: list[Any] = [token_text, self.max_events, TOKEN_SEARCH]
        for name, value in fields.items():
            args += [name, value]
        with redis_errors("record an action taken outside the console"):
            reply = call_script(self.client, "record_outside_event", [self.key], args)
        return reply.decode() if isinstance(reply, bytes) else str(reply)

    def recent(self, limit: int = 100, *, before: str | None = None) -> list[OutsideEvent]:
        """The newest events first, at most ``limit`` (1..1000), older than ``before``."""
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
            raise InvalidArgumentError(f"limit must be 1..1000, got {limit!r}")
        upper = f"({validate_id(before)}" if before is not None else "+"
        with redis_errors("read the actions taken outside the console"):
            rows = self.client.xrevrange(self.key, upper, "-", count=limit)
        return [_event(entry_id, raw) for entry_id, raw in rows]


def _event(entry_id: Any, raw: dict[Any, Any]) -> OutsideEvent:
    def text(name: str) -> str:
        value = raw.get(name.encode(), raw.get(name, b""))
        return value.decode(errors="replace") if isinstance(value, bytes) else str(value)

    try:
        what = json.loads(text("what") or "{}")
    except ValueError:
        what = {}
    at = text("at_ms")
    return OutsideEvent(
        id=entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id),
        at_ms=int(at) if at.isdigit() else 0,
        action=text("action"),
        topic=text("topic"),
        group=text("group") or None,
        who=text("who"),
        why=text("why"),
        source=text("source"),
        token=text("token"),
        what=what if isinstance(what, dict) else {},
    )
