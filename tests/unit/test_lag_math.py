"""Pure lag arithmetic and id/field parsing (no Redis)."""

from __future__ import annotations

import pytest

from mqcore.codec import (
    id_tuple,
    parse_headers,
    partition_count_from_meta,
    payload_text,
    validate_id,
)
from mqcore.errors import InvalidIdError
from mqcore.lag import combine_group_lag, group_totals, lag_ms_from_id, partition_row, topic_totals
from mqcore.models import GroupLag, LagExactness, PartitionLag
from tests.snapshot_parts import group, part


def _p(
    partition: int, lag: int | None, lag_ms: int | None, pending: int, exact: bool
) -> PartitionLag:
    return PartitionLag(
        partition=partition,
        last_delivered_id="0-0",
        lag=lag,
        lag_ms=lag_ms,
        pending=pending,
        lag_exact=exact,
        exactness=LagExactness.EXACT if exact else LagExactness.APPROXIMATE,
    )


def test_group_totals_sum_lag_and_take_the_worst_time() -> None:
    g = combine_group_lag("g", [_p(1, 5, 100, 2, True), _p(0, 3, 900, 1, True)])
    assert (g.lag, g.lag_ms, g.pending, g.lag_exact) == (8, 900, 3, True)
    assert [p.partition for p in g.partitions] == [0, 1]


def test_group_with_an_approximate_partition_is_not_exact() -> None:
    g = combine_group_lag("g", [_p(0, 5, 1, 0, True), _p(1, 10000, 5, 0, False)])
    assert g.lag == 10005
    assert not g.lag_exact


def test_group_with_only_unknown_partitions_has_unknown_lag() -> None:
    g = combine_group_lag("g", [_p(0, None, None, 0, False)])
    assert g.lag is None
    assert g.lag_ms is None
    assert combine_group_lag("g", []).lag == 0


def test_group_totals_of_partition_rows() -> None:
    rows = [_p(0, 4, 10, 1, True), _p(1, None, None, 2, False), _p(2, 6, 30, 0, True)]
    assert group_totals(rows) == {"lag": 10, "lag_ms": 30, "pending": 3, "lag_exact": False}
    assert group_totals(iter(rows[1:2]))["lag"] is None
    assert group_totals([]) == {"lag": 0, "lag_ms": 0, "pending": 0, "lag_exact": True}


def test_topic_totals_are_unknown_when_one_group_is() -> None:
    def totals(groups: list[GroupLag]) -> dict[str, int | None]:
        names = ("lag", "lag_ms", "pending", "oldest_pending_ms")
        return dict(zip(names, topic_totals(groups), strict=True))

    groups = [
        group("a", [part(0, oldest_pending_ms=9), part(1, oldest_pending_ms=None)],
              lag=5, lag_ms=70, pending=2),
        group("b", [part(0, oldest_pending_ms=40)], lag=1, lag_ms=None, pending=0),
    ]  # fmt: skip
    assert totals(groups) == {"lag": 6, "lag_ms": 70, "pending": 2, "oldest_pending_ms": 40}
    assert totals([*groups, group("c", [], lag=None)])["lag"] is None
    assert totals([]) == {"lag": 0, "lag_ms": None, "pending": 0, "oldest_pending_ms": None}


def test_partition_row_exactness() -> None:
    def row(exactness: LagExactness) -> PartitionLag:
        return partition_row(
            partition=0, last_delivered_id="1-0", lag=3, exactness=exactness, reason="",
            first_id="1000-0", now_ms=4000, pending=0, oldest_pending_ms=None,
            entries_read=None, length=5, last_id="5-0",
        )  # fmt: skip

    assert [(row(e).lag_exact, row(e).exactness) for e in LagExactness] == [
        (True, "exact"), (True, "counted"), (False, "approximate"), (True, "unknown")
    ]  # fmt: skip
    assert row(LagExactness.EXACT).lag_ms == 3000


def test_lag_ms_is_the_age_of_the_first_undelivered_entry() -> None:
    assert lag_ms_from_id("1000-5", 4000) == 3000
    assert lag_ms_from_id(None, 4000) == 0
    assert lag_ms_from_id("9000-0", 4000) == 0  # clock skew never gives negative lag


@pytest.mark.parametrize("good", ["0-0", "1700000000000-12", "5", "18446744073709551615-0"])
def test_valid_ids(good: str) -> None:
    assert validate_id(good) == good


@pytest.mark.parametrize(
    "bad",
    ["", "-", "1-", "a-1", "1-2-3", " 1-0", "18446744073709551616-0", "+", "1-0\n", "1-0\n2-0"],
)
def test_invalid_ids(bad: str) -> None:
    with pytest.raises(InvalidIdError):
        validate_id(bad)


def test_id_tuple_orders_numerically() -> None:
    assert id_tuple("10-0") > id_tuple("9-5")
    assert id_tuple("7") == (7, 0)


def test_partition_count_from_meta_defaults_to_one() -> None:
    assert partition_count_from_meta(b"4") == 4
    assert partition_count_from_meta(None) == 1
    assert partition_count_from_meta(b"x") == 1
    assert partition_count_from_meta(b"0") == 1


def test_headers_and_payload_decoding_are_lenient() -> None:
    assert parse_headers(b'{"a": "1", "n": 2}') == {"a": "1", "n": "2"}
    assert parse_headers(b"not json") == {}
    assert parse_headers(b"[1]") == {}
    assert payload_text(b"caf\xc3\xa9") == ("café", None)
    text, raw = payload_text(b"\xff\xfe")
    assert raw == b"\xff\xfe"
    assert "\ufffd" in text
