"""A small, safe filter language over one message (never ``eval``).

Grammar (keywords are case-insensitive; ``&&``, ``||`` and ``!`` are accepted too)::

    expr       := or
    or         := and ( "or" and )*
    and        := not ( "and" not )*
    not        := "not" not | "(" expr ")" | comparison
    comparison := path [ op literal ]          (a bare path: the field exists and is not
                                                null, false, 0 or "")
    op         := "==" | "!=" | "<" | "<=" | ">" | ">=" | "contains"
    path       := root ( "." name | "[" integer "]" | "[" string "]" )*
    root       := payload | headers | key | id | partition | timestamp
    literal    := "text" | 'text' | number | true | false | null

``payload`` is the message's JSON payload (an object, a list or a scalar);
``payload.customer.id`` walks objects and ``payload.items[0]`` lists. Values
compare by type: numbers with numbers, strings with strings (by code point),
``==`` also booleans and null; a comparison across types, or on a missing
field, is false, except ``!=``, which is the negation of ``==``. ``contains``
is a substring of a string or an element equal to the literal in a list.

Expressions are bounded (:data:`MAX_CHARS`, :data:`MAX_NODES`, nesting
:data:`MAX_DEPTH`): a bad one raises :class:`ExpressionError` with the
offending position. ``Expression.terms`` counts the nodes :data:`MAX_NODES` bounds
(comparisons, ``not`` and parentheses): what one message costs to evaluate, at most.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mqcore.errors import InvalidArgumentError

__all__ = ["MAX_CHARS", "ROOTS", "Expression", "ExpressionError", "compile_expression"]

MAX_CHARS = 1000
MAX_NODES = 64
MAX_DEPTH = 16
ROOTS = ("payload", "headers", "key", "id", "partition", "timestamp")
_OPS = ("==", "!=", "<=", ">=", "<", ">", "contains")
_MISSING = object()

_TOKEN = re.compile(
    r"""\s*(?:
    (?P<num>-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)
  | (?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
  | (?P<op>==|!=|<=|>=|<|>|&&|\|\||!|\(|\)|\[|\]|\.)
  | (?P<name>[A-Za-z_][A-Za-z0-9_\-]*)
)""",
    re.VERBOSE,
)


class ExpressionError(InvalidArgumentError):
    """A filter expression that does not parse (answers 400; exit code 2 in the CLI)."""


@dataclass(frozen=True, slots=True)
class _Tok:
    kind: str  # num, str, op, name, end
    text: str
    pos: int


def _tokens(source: str) -> list[_Tok]:
    out: list[_Tok] = []
    pos = 0
    while pos < len(source):
        if source[pos:].strip() == "":
            break
        match = _TOKEN.match(source, pos)
        if match is None or match.lastgroup is None:
            start = len(source) - len(source[pos:].lstrip())
            hint = " (compare with '==')" if source[start] == "=" else ""
            raise ExpressionError(
                f"unexpected character {source[start]!r} at position {start + 1}{hint}"
            )
        kind = match.lastgroup
        out.append(_Tok(kind, match.group(kind), match.start(kind)))
        pos = match.end()
    out.append(_Tok("end", "", len(source)))
    return out


_ESCAPES = {"\\": "\\", '"': '"', "'": "'", "n": "\n", "t": "\t", "r": "\r", "/": "/"}


def _string(tok: _Tok) -> str:
    """The text of a quoted literal; escapes: backslash, quotes, n t r / and uXXXX."""
    body, out, i = tok.text[1:-1], [], 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        nxt = body[i + 1 : i + 2]
        if nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        elif nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", body[i + 2 : i + 6]):
            out.append(chr(int(body[i + 2 : i + 6], 16)))
            i += 6
        else:
            raise ExpressionError(f"bad escape in the string at position {tok.pos + i + 2}")
    return "".join(out)


Node = Callable[[Mapping[str, Any]], bool]


class _Parser:
    def __init__(self, source: str) -> None:
        self.toks = _tokens(source)
        self.i = 0
        self.nodes = 0
        self.roots: set[str] = set()

    def peek(self) -> _Tok:
        return self.toks[self.i]

    def take(self) -> _Tok:
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def word(self, *words: str) -> bool:
        tok = self.peek()
        return tok.kind == "name" and tok.text.lower() in words

    def fail(self, what: str) -> ExpressionError:
        tok = self.peek()
        got = "the end" if tok.kind == "end" else repr(tok.text)
        return ExpressionError(f"expected {what} at position {tok.pos + 1}, found {got}")

    def count(self, depth: int) -> None:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise ExpressionError(f"expression too long: at most {MAX_NODES} terms")
        if depth > MAX_DEPTH:
            raise ExpressionError(f"expression nested too deeply: at most {MAX_DEPTH} levels")

    def parse(self) -> Node:
        node = self.or_(0)
        if self.peek().kind != "end":
            raise self.fail("'and', 'or' or the end")
        return node

    def or_(self, depth: int) -> Node:
        parts = [self.and_(depth)]
        while self.word("or") or self.peek().text == "||":
            self.take()
            parts.append(self.and_(depth))
        if len(parts) == 1:
            return parts[0]
        return lambda m: any(p(m) for p in parts)

    def and_(self, depth: int) -> Node:
        parts = [self.not_(depth)]
        while self.word("and") or self.peek().text == "&&":
            self.take()
            parts.append(self.not_(depth))
        if len(parts) == 1:
            return parts[0]
        return lambda m: all(p(m) for p in parts)

    def not_(self, depth: int) -> Node:
        self.count(depth)
        tok = self.peek()
        if self.word("not") or (tok.kind == "op" and tok.text == "!"):
            self.take()
            inner = self.not_(depth + 1)
            return lambda m: not inner(m)
        if tok.kind == "op" and tok.text == "(":
            self.take()
            inner = self.or_(depth + 1)
            if self.peek().text != ")" or self.peek().kind != "op":
                raise self.fail("')'")
            self.take()
            return inner
        return self.comparison()

    def path(self) -> list[str | int]:
        tok = self.peek()
        if tok.kind != "name" or tok.text not in ROOTS:
            raise self.fail("a field (" + ", ".join(ROOTS) + ")")
        self.take()
        self.roots.add(tok.text)
        steps: list[str | int] = [tok.text]
        while self.peek().kind == "op" and self.peek().text in (".", "["):
            if self.take().text == ".":
                name = self.peek()
                if name.kind != "name":
                    raise self.fail("a field name after '.'")
                steps.append(self.take().text)
                continue
            inner = self.peek()
            if inner.kind == "num" and re.fullmatch(r"\d+", inner.text):
                steps.append(int(self.take().text))
            elif inner.kind == "str":
                steps.append(_string(self.take()))
            else:
                raise self.fail("an index or a quoted name inside '[ ]'")
            if self.peek().text != "]":
                raise self.fail("']'")
            self.take()
        return steps

    def literal(self) -> Any:
        tok = self.peek()
        if tok.kind == "str":
            self.take()
            return _string(tok)
        if tok.kind == "num":
            self.take()
            return float(tok.text) if any(c in tok.text for c in ".eE") else int(tok.text)
        if self.word("true", "false", "null"):
            text = self.take().text.lower()
            return None if text == "null" else text == "true"
        raise self.fail("a value (a quoted string, a number, true, false or null)")

    def comparison(self) -> Node:
        steps = self.path()
        tok = self.peek()
        op = tok.text.lower() if tok.kind in ("op", "name") else ""
        if op not in _OPS:
            return lambda m: _truthy(_walk(m, steps))
        self.take()
        value = self.literal()
        return _compare_node(steps, op, value)


def _walk(message: Mapping[str, Any], steps: list[str | int]) -> Any:
    value: Any = message.get(str(steps[0]), _MISSING)
    for step in steps[1:]:
        if isinstance(step, int) and isinstance(value, list):
            value = value[step] if step < len(value) else _MISSING
        elif isinstance(value, dict):
            value = value.get(str(step), _MISSING)
        else:
            return _MISSING
    return value


def _truthy(value: Any) -> bool:
    return value is not _MISSING and value not in (None, False, 0, "")


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _equal(a: Any, b: Any) -> bool:
    if _number(a) and _number(b):
        return bool(a == b)
    return type(a) is type(b) and a == b


def _order(a: Any, b: Any, op: str) -> bool:
    if not ((_number(a) and _number(b)) or (isinstance(a, str) and isinstance(b, str))):
        return False
    if op == "<":
        return bool(a < b)
    if op == "<=":
        return bool(a <= b)
    if op == ">":
        return bool(a > b)
    return bool(a >= b)


def _compare_node(steps: list[str | int], op: str, literal: Any) -> Node:
    def node(message: Mapping[str, Any]) -> bool:
        value = _walk(message, steps)
        if op == "!=":
            return value is _MISSING or not _equal(value, literal)
        if value is _MISSING:
            return False
        if op == "==":
            return _equal(value, literal)
        if op == "contains":
            if isinstance(value, str):
                return isinstance(literal, str) and literal in value
            if isinstance(value, list):
                return any(_equal(v, literal) for v in value)
            return False
        return _order(value, literal, op)

    return node


@dataclass(frozen=True, slots=True)
class Expression:
    """A compiled filter: ``matches(view)`` over a dict of the roots (see :data:`ROOTS`);
    ``terms``: its nodes (1..:data:`MAX_NODES`), the evaluations one message costs at most."""

    source: str
    roots: frozenset[str]
    _node: Node
    terms: int = 1

    def matches(self, view: Mapping[str, Any]) -> bool:
        return self._node(view)


def compile_expression(source: str) -> Expression:
    """Parse ``source`` into an :class:`Expression`, or raise :class:`ExpressionError`."""
    if not isinstance(source, str) or not source.strip():
        raise ExpressionError("the filter expression is empty")
    if len(source) > MAX_CHARS:
        raise ExpressionError(f"the filter expression is longer than {MAX_CHARS} characters")
    parser = _Parser(source)
    node = parser.parse()
    return Expression(source, frozenset(parser.roots), node, parser.nodes)
