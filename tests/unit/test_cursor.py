"""The one opaque page cursor: round trip, and a clear refusal of anything else."""

from __future__ import annotations

import pytest

from mqcore.cursor import pack_cursor, unpack_cursor
from mqcore.errors import InvalidArgumentError

BAD = InvalidArgumentError("invalid cursor")


def test_round_trip_has_no_padding_and_is_url_safe() -> None:
    doc = {"v": 1, "p": {"0": "1-0"}, "m": "?/+"}
    text = pack_cursor(doc)
    assert not set(text) & set("=+/")
    assert unpack_cursor(text, max_chars=100, bad=BAD) == doc


@pytest.mark.parametrize("text", ["", "!!!", "e30x", "A" * 101, None, 5])
def test_refuses_what_is_not_a_cursor(text: object) -> None:
    with pytest.raises(InvalidArgumentError, match="invalid cursor"):
        unpack_cursor(text, max_chars=100, bad=BAD)
