"""The browser's filters over one message: key, header, text and an expression (all must hold).

- ``key``: the message key, exactly;
- ``header``: ``NAME=VALUE`` (that header with exactly that value) or ``NAME`` (present);
- ``text``: the DLQ pages' text rule (:func:`mqcore.text_match.text_matches`: case-insensitive,
  in the first 64 KiB of the payload or of a header name or value);
- ``expression``: :mod:`mqcore.browse.expr` over the payload read as JSON (the first
  :data:`JSON_PAYLOAD_BYTES`; a payload that is not JSON is its text, a binary one null),
  the headers, key, id, partition and timestamp.

Filters run on entries as Redis sent them and decode only what they look at (a scan
looks at up to 100,000 entries per request); the scan builds a message for matches only.
An expression's CPU is bounded per request by a budget of term evaluations
(:meth:`Filters.scan_within`: each entry costs the expression's terms plus one for
reading it), which lowers the scan's ``max_scan``; the page's cursor goes on from there.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mqcore.browse.expr import Expression, compile_expression
from mqcore.codec import DEFAULT_MAX_DECODE_BYTES, decode_text, parse_headers, payload_text
from mqcore.errors import InvalidArgumentError
from mqcore.text_match import text_matches

__all__ = ["JSON_PAYLOAD_BYTES", "Filters", "RawEntry", "parse_header_filter"]

JSON_PAYLOAD_BYTES = DEFAULT_MAX_DECODE_BYTES  # a longer payload is not parsed for an expression


def parse_header_filter(text: str) -> tuple[str, str | None]:
    """``NAME=VALUE`` -> (name, value); ``NAME`` -> (name, None); InvalidArgumentError if empty."""
    name, sep, value = text.partition("=")
    name = name.strip()
    if not name:
        raise InvalidArgumentError(f"header filter takes NAME or NAME=VALUE, got {text[:80]!r}")
    return name, value if sep else None


RawEntry = tuple[str, int, Mapping[bytes, Any]]  # (id, partition, fields as redis-py sends them)


def _payload_value(raw: bytes | None, cap: int) -> Any:
    """The payload as an expression sees it: its JSON value, else its text (None: binary,
    or longer than the decode cap ``cap``: such a payload is never decoded)."""
    if raw is None:
        return ""
    if len(raw) > cap:
        return None
    if len(raw) <= JSON_PAYLOAD_BYTES:
        try:
            return json.loads(raw)
        except (ValueError, RecursionError):  # not JSON, or nested beyond the parser's depth
            pass
    text, binary = payload_text(raw)
    return None if binary is not None else text


class _View(dict[str, Any]):
    """What an expression sees of one raw entry (:data:`mqcore.browse.expr.ROOTS`), each
    root decoded when the expression first asks for it."""

    def __init__(self, entry: RawEntry, headers: Callable[[], dict[str, str]], cap: int) -> None:
        super().__init__()
        self.entry, self.headers, self.cap = entry, headers, cap

    def __missing__(self, root: str) -> Any:
        entry_id, partition, fields = self.entry
        if root == "payload":
            value: Any = _payload_value(fields.get(b"payload"), self.cap)
        elif root == "headers":
            value = self.headers()
        elif root == "key":
            raw = fields.get(b"key")
            value = decode_text(raw) if raw else None
        elif root == "id":
            value = entry_id
        elif root == "partition":
            value = partition
        elif root == "timestamp":
            value = decode_text(fields.get(b"timestamp"))
        else:
            raise KeyError(root)
        self[root] = value
        return value

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default


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

    def scan_within(self, max_scan: int, budget: int) -> int:
        """``max_scan`` lowered so the expression evaluates at most about ``budget`` terms
        (an entry costs its terms + 1); unchanged without an expression or with
        ``budget`` <= 0 (no budget). Never below 1: a page always moves on."""
        if self.expression is None or budget <= 0:
            return max_scan
        return max(1, min(max_scan, budget // (self.expression.terms + 1)))

    @property
    def reads_data(self) -> bool:
        """Whether the filters look into payloads or header values (masking refuses them)."""
        header_value = self.header is not None and self.header[1] is not None
        expr = self.expression is not None and bool(self.expression.roots & {"payload", "headers"})
        return bool(self.text) or header_value or expr

    def matches(self, entry: RawEntry, cap: int = DEFAULT_MAX_DECODE_BYTES) -> bool:
        """Whether one raw entry passes every filter; only what a filter needs is decoded,
        and no payload or headers longer than ``cap`` (the decode cap: such a payload matches
        no text, headers count as none)."""
        fields = entry[2]
        if self.key is not None:
            raw = fields.get(b"key")
            if not raw or decode_text(raw) != self.key:
                return False
        parsed: list[dict[str, str]] = []

        def headers() -> dict[str, str]:
            if not parsed:
                raw = fields.get(b"headers")
                parsed.append(parse_headers(raw) if raw is None or len(raw) <= cap else {})
            return parsed[0]

        if self.header is not None:
            name, value = self.header
            found = headers().get(name)
            if found is None or (value is not None and found != value):
                return False
        if self.text:
            raw = fields.get(b"payload")
            text = payload_text(raw)[0] if raw is None or len(raw) <= cap else ""
            if not text_matches(text, headers(), self.text):
                return False
        if self.expression is not None:
            return self.expression.matches(_View(entry, headers, cap))
        return True
