import random

import pytest

from mqcore.errors import InvalidArgumentError
from mqcore.retry import RetryPolicy


def test_backoff_doubles_and_caps_without_jitter() -> None:
    policy = RetryPolicy(base_ms=1000, max_ms=60000, jitter=0.0)
    assert [policy.delay_ms(n) for n in range(1, 9)] == [
        1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000,
    ]  # fmt: skip
    assert policy.delay_ms(10_000) == 60000  # huge counts do not overflow


def test_jitter_stays_within_its_band_and_the_cap() -> None:
    policy = RetryPolicy(base_ms=1000, max_ms=5000, jitter=0.1)
    rng = random.Random(7)
    delays = [policy.delay_ms(2, rng) for _ in range(500)]
    assert all(1800 <= d <= 2200 for d in delays)
    assert len(set(delays)) > 50  # actually spread
    capped = [policy.delay_ms(9, rng) for _ in range(200)]
    assert all(4500 <= d <= 5000 for d in capped)


def test_java_semantics_of_max_retries() -> None:
    policy = RetryPolicy(max_retries=3)
    # handled with retryCount 0, 1, 2, 3 (N + 1 times), dead-lettered with retryCount = 3
    assert [policy.should_dead_letter(n) for n in range(5)] == [False, False, False, True, True]
    assert RetryPolicy(max_retries=0).should_dead_letter(0)


@pytest.mark.parametrize(
    "kwargs",
    [{"max_retries": -1}, {"base_ms": -5}, {"base_ms": 10, "max_ms": 5}, {"jitter": 1.5}],
)
def test_invalid_policies_are_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(InvalidArgumentError):
        RetryPolicy(**kwargs)  # type: ignore[arg-type]


def test_retry_count_starts_at_one() -> None:
    with pytest.raises(InvalidArgumentError):
        RetryPolicy().delay_ms(0)
