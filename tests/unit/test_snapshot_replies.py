"""XINFO GROUPS replies read the same by position (Redis 7's RESP2 order) and by name."""

from __future__ import annotations

from mqcore.snapshot.replies import parse_groups

FLAT = [
    [b"name", b"g", b"consumers", 1, b"pending", 4, b"last-delivered-id", b"5-1",
     b"entries-read", 4, b"lag", 6],
    [b"name", b"h\xff", b"consumers", 0, b"pending", 0, b"last-delivered-id", b"0-0",
     b"entries-read", None, b"lag", None],
]  # fmt: skip


def test_positional_and_named_reads_agree() -> None:
    expected = [("g", 4, "5-1", 4, 6), ("h\ufffd", 0, "0-0", None, None)]
    assert parse_groups(FLAT) == expected
    reordered = [g[2:4] + g[:2] + g[4:] for g in FLAT]  # another field order: read by name
    assert parse_groups(reordered) == expected
    longer = [[*g, b"extra", 1] for g in FLAT]  # a later Redis with more fields
    assert parse_groups(longer) == expected
    as_dicts = [{k.decode(): v for k, v in zip(g[::2], g[1::2], strict=True)} for g in FLAT]
    assert parse_groups(as_dicts) == expected
    assert parse_groups(None) == []
