"""The browser's filter expression language: what matches, and clear errors on bad input."""

from __future__ import annotations

from typing import Any

import pytest

from mqcore.browse.expr import MAX_CHARS, ExpressionError, compile_expression

MSG: dict[str, Any] = {
    "payload": {
        "customer": "c-1",
        "amount": 150,
        "price": 9.5,
        "paid": True,
        "note": None,
        "tags": ["vip", "eu"],
        "items": [{"sku": "A"}, {"sku": "B"}],
        "ship to": {"city": "Zürich"},
    },
    "headers": {"x-trace-id": "t-9", "source": "web"},
    "key": "k-1",
    "id": "1700000000000-3",
    "partition": 2,
    "timestamp": "2026-11-26T10:00:00Z",
}


def match(source: str, view: dict[str, Any] | None = None) -> bool:
    return compile_expression(source).matches(MSG if view is None else view)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('payload.customer == "c-1"', True),
        ("payload.customer == 'c-1'", True),
        ('payload.customer == "c-2"', False),
        ('payload.customer != "c-2"', True),
        ("payload.amount > 100", True),
        ("payload.amount > 150", False),
        ("payload.amount >= 150", True),
        ("payload.amount < 150.5", True),
        ("payload.amount <= 149", False),
        ("payload.price == 9.5", True),
        ("payload.amount == 150.0", True),
        ('payload.amount == "150"', False),  # no coercion across types
        ('payload.amount > "100"', False),
        ("payload.paid == true", True),
        ("payload.paid == 1", False),
        ("payload.note == null", True),
        ('payload.tags contains "vip"', True),
        ('payload.tags CONTAINS "us"', False),
        ('payload.customer contains "c-"', True),
        ('payload.items[1].sku == "B"', True),
        ('payload.items[5].sku == "B"', False),
        ('payload["ship to"].city == "Z\\u00fcrich"', True),
        ('payload.missing == "x"', False),
        ('payload.missing != "x"', True),  # != is the negation of ==
        ("payload.missing > 1", False),
        ("payload.paid", True),
        ("payload.note", False),
        ("payload.missing", False),
        ('payload.customer == "c-1" and payload.amount > 100', True),
        ('payload.customer == "c-2" or payload.amount > 100', True),
        ('payload.customer == "c-2" || payload.amount > 1000', False),
        ('payload.customer == "c-1" && not payload.amount > 100', False),
        ('!(payload.customer == "c-2")', True),
        ('(payload.customer == "c-2" or payload.amount > 100) and key == "k-1"', True),
        ('headers.x-trace-id == "t-9"', True),
        ('headers.source != "web"', False),
        ("partition == 2", True),
        ('id >= "1700000000000-0"', True),
        ('timestamp < "2026-12-01"', True),
    ],
)
def test_matches(source: str, expected: bool) -> None:
    assert match(source) is expected


def test_payload_that_is_not_an_object_never_raises() -> None:
    for payload in ("plain text", 42, None, [1, 2]):
        view = {**MSG, "payload": payload}
        assert match('payload.customer == "c-1"', view) is False
        assert match("payload[0] == 1", view) is (payload == [1, 2])


def test_roots_are_reported() -> None:
    assert compile_expression('payload.a == 1 or key == "x"').roots == {"payload", "key"}


@pytest.mark.parametrize(
    ("source", "needle"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ('payload.customer = "c-1"', "'=='"),
        ('customer == "c-1"', "expected a field"),
        ("payload.amount >", "expected a value"),
        ("payload.amount > abc", "expected a value"),
        ('payload.customer == "c-1" and', "expected a field"),
        ('(payload.customer == "c-1"', "expected ')'"),
        ('payload.customer == "c-1")', "expected 'and', 'or' or the end"),
        ("payload.", "field name after '.'"),
        ("payload[x]", "inside '[ ]'"),
        ("payload[0", "expected ']'"),
        ('payload.a == "unterminated', "unexpected character"),
        ('payload.a == "bad \\q escape"', "bad escape"),
        ("payload.a == 1 ; drop", "unexpected character ';'"),
        ("__import__('os')", "expected a field"),
        ("x" * (MAX_CHARS + 1), "longer than"),
        ("(" * 40 + "payload.a" + ")" * 40, "nested too deeply"),
        (" or ".join(["payload.a"] * 70), "too long"),
    ],
)
def test_errors_are_clear(source: str, needle: str) -> None:
    with pytest.raises(ExpressionError) as err:
        compile_expression(source)
    assert needle in str(err.value)


def test_error_names_the_position() -> None:
    with pytest.raises(ExpressionError, match="position 17"):
        compile_expression("payload.amount >")


def test_expression_error_is_an_invalid_argument() -> None:
    from mqcore.errors import InvalidArgumentError

    assert issubclass(ExpressionError, InvalidArgumentError)
