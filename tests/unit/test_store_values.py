"""The console store's JSON values: the same bytes with or without non-string keys."""

from __future__ import annotations

import datetime
import json

from dashboard.store.keys import dumps, loads


def test_dumps_string_keys_and_other_keys() -> None:
    when = datetime.date(2026, 11, 26)
    assert dumps({"a": [1, {"b": None}]}) == b'{"a":[1,{"b":null}]}'
    assert dumps({"a": {1: "x", "2": when}}) == b'{"a":{"1":"x","2":"2026-11-26"}}'
    assert dumps({"s": {1, 2} - {1}}) == b'{"s":"{2}"}'
    big = {"topics": [{"topic": f"t{i}", "lag": i, "ids": [str(i)]} for i in range(100)]}
    assert json.loads(dumps(big)) == big
    assert loads(dumps({3: [3]})) == {"3": [3]}
