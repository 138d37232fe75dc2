"""The console store's JSON values: the same bytes with or without non-string keys."""

from __future__ import annotations

import datetime
import json

from dashboard.store import values


def test_dumps_string_keys_and_other_keys() -> None:
    when = datetime.date(2026, 11, 26)
    assert values.dumps({"a": [1, {"b": None}]}) == b'{"a":[1,{"b":null}]}'
    assert values.dumps({"a": {1: "x", "2": when}}) == b'{"a":{"1":"x","2":"2026-11-26"}}'
    assert values.dumps({"s": {1, 2} - {1}}) == b'{"s":"{2}"}'
    big = {"topics": [{"topic": f"t{i}", "lag": i, "ids": [str(i)]} for i in range(100)]}
    assert json.loads(values.dumps(big)) == big
    assert values.loads(values.dumps({3: [3]})) == {"3": [3]}


def test_dump_parts_are_the_same_bytes_as_one_dump() -> None:
    from dashboard.store.values import PART_ITEMS, dump_parts, dumps

    big = {
        "a": 1,
        "topics": [{"topic": f"t{i}", "n": i} for i in range(2 * PART_ITEMS + 3)],
        "z": [],
    }
    for value in (big, {"topics": []}, {"a": 1}, {"topics": [1], 2: "non-string key"}):
        parts = list(dump_parts(value))  # type: ignore[arg-type]
        assert b"".join(parts) == dumps(value)
    assert len(list(dump_parts(big))) == 5  # head, three parts of topics, tail
