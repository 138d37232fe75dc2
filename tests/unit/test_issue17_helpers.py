"""Helpers issue 17 shares: the one measure of a raw entry's size (byte-bounded reads size
their COUNT by it) and the one CSV of export rows."""

from __future__ import annotations

from mqcore.codec import entry_bytes


def test_entry_bytes_counts_id_names_and_values() -> None:
    fields = {b"payload": b"x" * 10, b"key": b"k"}
    assert entry_bytes((b"1-0", fields)) == 3 + 7 + 10 + 3 + 1
    assert entry_bytes(("1-0", [b"payload", b"x" * 10, b"key", b"k"])) == 24


def test_entry_bytes_odd_shapes() -> None:
    assert entry_bytes((b"1-0", None)) == 3
    assert entry_bytes((b"1-0", {b"n": 5})) == 4


def test_csv_row_lines_one_writer_for_console_and_cli() -> None:
    """Export rows as CSV (the console's exports and the CLI's --format csv): headers as
    compact JSON, formula-like cells neutralised, missing columns empty."""
    from mqcore.export_rows import csv_row_lines

    lines = list(csv_row_lines(("key", "headers", "x"), [{"key": "=1+1", "headers": {"a": "b"}}]))
    assert lines == ["key,headers,x\r\n", '\'=1+1,"{""a"":""b""}",\r\n']
