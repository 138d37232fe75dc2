"""The one measure of a raw stream entry's size (byte-bounded reads size their COUNT by it):
the same for a field map and a flat list, values that are not text not counted."""

from __future__ import annotations

from mqcore.codec import entry_bytes


def test_entry_bytes_counts_id_names_and_values() -> None:
    fields = {b"payload": b"x" * 10, b"key": b"k"}
    assert entry_bytes((b"1-0", fields)) == 3 + 7 + 10 + 3 + 1
    assert entry_bytes(("1-0", [b"payload", b"x" * 10, b"key", b"k"])) == 24


def test_entry_bytes_odd_shapes() -> None:
    assert entry_bytes((b"1-0", None)) == 3
    assert entry_bytes((b"1-0", {b"n": 5})) == 4
