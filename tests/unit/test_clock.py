"""Times a person writes (epoch ms or ISO-8601), read by the DLQ filters and the timeline."""

from __future__ import annotations

import pytest

from mqcore.clock import ms_from_text


def test_epoch_ms_and_iso_instants() -> None:
    assert ms_from_text(" 1700000000000 ") == 1_700_000_000_000
    assert ms_from_text("2024-01-01T00:00:00") == 1_704_067_200_000  # no zone: UTC
    assert ms_from_text("2024-01-01T00:00:00.123Z") == 1_704_067_200_123
    assert ms_from_text("2024-01-01T01:00:00+01:00") == 1_704_067_200_000


@pytest.mark.parametrize("bad", ["soon", "-5", "2024-13-01", "0001-01-01T00:00:00+23:59", ""])
def test_anything_else_is_a_value_error(bad: str) -> None:
    with pytest.raises(ValueError):
        ms_from_text(bad)
