"""The browser's filters over one message: key, header, text and an expression (all must hold).

- ``key``: the message key, exactly;
- ``header``: ``NAME=VALUE`` (that header with exactly that value) or ``NAME`` (present);
- ``text``: the DLQ pages' text rule (:func:`mqcore.dlq.browse.text_matches`: case-insensitive,
  in the first 64 KiB of the payload or of a header name or value);
- ``expression``: :mod:`mqcore.browse.expr` over the payload read as JSON (the first
  :data:`JSON_PAYLOAD_BYTES`; a payload that is not JSON is its text), the headers, key,
  id, partition and timestamp.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from mqcore.browse.expr import Expression, compile_expression
from mqcore.dlq.browse import text_matches
from mqcore.errors import InvalidArgumentError
from mqcore.models import Message

__all__ = ["JSON_PAYLOAD_BYTES", "Filters", "expression_view", "parse_header_filter"]

JSON_PAYLOAD_BYTES = 1024 * 1024  # a longer payload is not parsed for an expression


def parse_header_filter(text: str) -> tuple[str, str | None]:
    """``NAME=VALUE`` -> (name, value); ``NAME`` -> (name, None); InvalidArgumentError if empty."""
    name, sep, value = text.partition("=")
    name = name.strip()
    if not name:
        raise InvalidArgumentError(f"header filter takes NAME or NAME=VALUE, got {text[:80]!r}")
    return name, value if sep else None


def expression_view(message: Message, *, with_payload: bool = True) -> dict[str, Any]:
    """What an expression sees of ``message`` (see :data:`mqcore.browse.expr.ROOTS`)."""
    payload: Any = None
    if with_payload and message.payload_bytes is None:
        text = message.payload
        if len(text) <= JSON_PAYLOAD_BYTES:
            try:
                payload = json.loads(text)
            except ValueError:
                payload = text
    return {
        "payload": payload,
        "headers": message.headers,
        "key": message.key,
        "id": message.id,
        "partition": message.partition,
        "timestamp": message.timestamp,
    }


@dataclass(frozen=True)
class Filters:
    key: str | None = None
    header: tuple[str, str | None] | None = None
    text: str | None = None
    expression: Expression | None = None

    @classmethod
    def of(
        cls,
        *,
        key: str | None = None,
        header: str | None = None,
        text: str | None = None,
        expression: str | None = None,
    ) -> Filters | None:
        """Filters from user input (empty values are no filter); None when there are none.
        A bad header filter or expression raises InvalidArgumentError (ExpressionError)."""
        built = cls(
            key=key or None,
            header=parse_header_filter(header) if header else None,
            text=text or None,
            expression=compile_expression(expression) if expression else None,
        )
        return built if built.active else None

    @property
    def active(self) -> bool:
        return any(v is not None for v in (self.key, self.header, self.text, self.expression))

    @property
    def reads_data(self) -> bool:
        """Whether the filters look into payloads or header values (masking refuses them)."""
        header_value = self.header is not None and self.header[1] is not None
        expr = self.expression is not None and bool(self.expression.roots & {"payload", "headers"})
        return bool(self.text) or header_value or expr

    def matches(self, message: Message) -> bool:
        if self.key is not None and message.key != self.key:
            return False
        if self.header is not None:
            name, value = self.header
            if name not in message.headers:
                return False
            if value is not None and message.headers[name] != value:
                return False
        if self.text and not text_matches(message.payload, message.headers, self.text):
            return False
        if self.expression is not None:
            view = expression_view(message, with_payload="payload" in self.expression.roots)
            return self.expression.matches(view)
        return True
