import pytest

from mqcore.partition import java_string_hash, partition_for_key


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", 0),
        ("a", 97),
        ("hello", 99162322),
        ("polygenelubricants", -2147483648),  # Integer.MIN_VALUE in Java
        ("\U0001f600", 1772899),  # one astral char = two UTF-16 code units
        ("é", 233),
    ],
)
def test_java_string_hash_matches_java(value: str, expected: int) -> None:
    assert java_string_hash(value) == expected


def test_schema_worked_values() -> None:
    assert [partition_for_key(k, 3) for k in ["k", "k0", "k1", "k2", "k3"]] == [2, 2, 0, 1, 2]


def test_negative_hash_goes_to_a_valid_partition() -> None:
    # Java: MIN_VALUE % 7 = -2 (truncated), + 7 = 5
    assert partition_for_key("polygenelubricants", 7) == 5
    assert all(0 <= partition_for_key(f"key-{i}", 5) < 5 for i in range(200))


def test_single_partition_and_bad_count() -> None:
    assert partition_for_key("anything", 1) == 0
    with pytest.raises(ValueError, match="partitions must be"):
        partition_for_key("x", 0)
