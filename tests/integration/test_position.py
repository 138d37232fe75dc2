"""Group position moves against a real Redis: the dry run, the move, and a lag that stays known."""

from __future__ import annotations

import pytest
import redis

from mqcore.admin import Admin, PositionTarget
from mqcore.admin import position as position_module
from mqcore.config import MQConfig
from mqcore.errors import (
    InvalidArgumentError,
    InvalidIdError,
    PositionOutOfRangeError,
    UnknownGroupError,
    UnknownPartitionError,
    UnknownTopicError,
)
from tests.integration.raw_java import create_topic

pytestmark = pytest.mark.redis
G = "default-group"


def _fill(r: redis.Redis, key: str, ms_list: list[int]) -> list[str]:
    return [r.xadd(key, {"payload": str(ms)}, id=f"{ms}-0").decode() for ms in ms_list]


def _group(r: redis.Redis, key: str) -> dict[str, object]:
    row = next(g for g in r.xinfo_groups(key) if g["name"] == G.encode())
    return dict(row)


def _check(r: redis.Redis, mq_config: MQConfig, target: PositionTarget, key: str) -> None:
    admin = Admin(mq_config, r)
    plan = admin.plan_position("orders", G, target, [0])
    before = _group(r, key)
    done = admin.set_position("orders", G, target, [0])
    assert done.applied
    assert not plan.applied
    move = done.moves[0]
    after = _group(r, key)
    assert after["lag"] is not None, target
    assert after["lag"] == plan.moves[0].lag_after == move.lag_after, target
    assert after["last-delivered-id"].decode() == move.target_id
    assert after["entries-read"] == move.target_entries_read
    assert after["pending"] == before["pending"]  # the PEL is untouched
    # what the group receives next is exactly lag_after entries
    got = r.xreadgroup(G, "c9", {key: ">"}, count=10_000)
    assert (len(got[0][1]) if got else 0) == move.lag_after


@pytest.fixture
def topic(r: redis.Redis, mq_config: MQConfig) -> str:
    create_topic(r, mq_config.keys, "orders", 2)
    key = mq_config.keys.partition("orders", 0)
    _fill(r, key, [1000, 2000, 3000, 4000, 5000])
    r.xreadgroup(G, "c1", {key: ">"}, count=3)  # delivered up to 3000
    return key


@pytest.mark.parametrize(
    ("target", "lag_after", "skipped", "redelivered"),
    [
        (PositionTarget.of("latest"), 0, 2, 0),
        (PositionTarget.of("earliest"), 5, 0, 3),
        (PositionTarget.of("time", 2500), 3, 0, 1),  # between entries: next is 3000
        (PositionTarget.of("time", "1970-01-01T00:00:04Z"), 2, 0, 0),
        (PositionTarget.of("id", "1500-0"), 4, 0, 2),  # an id not present
        (PositionTarget.of("id", "4000"), 1, 1, 0),
    ],
)
def test_plan_then_move(
    r: redis.Redis,
    mq_config: MQConfig,
    topic: str,
    target: PositionTarget,
    lag_after: int,
    skipped: int,
    redelivered: int,
) -> None:
    plan = Admin(mq_config, r).plan_position("orders", G, target, [0])
    move = plan.moves[0]
    assert (move.partition, move.current_id, move.current_entries_read) == (0, "3000-0", 3)
    assert move.lag_before == 2
    assert (move.lag_after, move.skipped, move.redelivered) == (lag_after, skipped, redelivered)
    assert move.pending == 3
    assert _group(r, topic)["last-delivered-id"] == b"3000-0"  # the dry run wrote nothing
    _check(r, mq_config, target, topic)


def test_trimmed_and_empty_streams(r: redis.Redis, mq_config: MQConfig, topic: str) -> None:
    r.xtrim(topic, maxlen=2, approximate=False)  # 4000, 5000 left; the group is at 3000
    for target in ("earliest", "latest", "time:3500", "id:1000-0", "earliest"):
        _check(r, mq_config, PositionTarget.parse(target), topic)
    empty = mq_config.keys.partition("orders", 1)  # never written
    admin = Admin(mq_config, r)
    for target in ("earliest", "latest", "time:99", "id:0-0"):
        done = admin.set_position("orders", G, PositionTarget.parse(target), [1])
        assert _group(r, empty)["lag"] == done.moves[0].lag_after == 0
    r.xtrim(topic, maxlen=0, approximate=False)  # emptied after use
    _check(r, mq_config, PositionTarget.parse("earliest"), topic)
    _check(r, mq_config, PositionTarget.parse("latest"), topic)


def test_big_partition_counted_from_the_nearer_end(
    r: redis.Redis, mq_config: MQConfig, topic: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(position_module, "COUNT_PAGE", 7)  # many pages at a small size
    _fill(r, topic, list(range(6000, 6100)))
    for target in ("id:6010-0", "id:6090-0", "time:6050", "earliest", "latest", "id:2000-0"):
        _check(r, mq_config, PositionTarget.parse(target), topic)


def test_all_partitions_and_totals(r: redis.Redis, mq_config: MQConfig, topic: str) -> None:
    _fill(r, mq_config.keys.partition("orders", 1), [1000, 2000])
    plan = Admin(mq_config, r).set_position("orders", G, PositionTarget.parse("latest"))
    assert [m.partition for m in plan.moves] == [0, 1]
    assert (plan.skipped, plan.redelivered, plan.direction) == (4, 0, "skip")
    plan = Admin(mq_config, r).plan_position("orders", G, PositionTarget.parse("earliest"))
    assert (plan.redelivered, plan.direction) == (7, "rewind")


def test_moves_under_us_are_recounted(
    r: redis.Redis, mq_config: MQConfig, topic: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = position_module.plan_partition
    calls = {"n": 0}

    def racing(*args: object, **kw: object) -> object:
        found = real(*args, **kw)  # type: ignore[arg-type]
        calls["n"] += 1
        if calls["n"] == 1:
            r.xtrim(topic, maxlen=3, approximate=False)  # the head moves after the count
        r.xadd(topic, {"payload": "late"})  # and the tail always grows
        return found

    monkeypatch.setattr(position_module, "plan_partition", racing)
    done = Admin(mq_config, r).set_position("orders", G, PositionTarget.parse("id:1000-0"), [0])
    assert calls["n"] == 2  # the trim made the first count stale
    assert _group(r, topic)["lag"] == done.moves[0].lag_after == r.xlen(topic)


@pytest.mark.parametrize(
    ("topic_name", "group", "target", "partitions", "error"),
    [
        ("nope", G, "latest", None, UnknownTopicError),
        ("orders", "nogroup", "latest", None, UnknownGroupError),
        ("orders", G, "latest", [7], UnknownPartitionError),
        ("orders", G, "id:99999-0", [0], PositionOutOfRangeError),
    ],
)
def test_errors_write_nothing(
    r: redis.Redis,
    mq_config: MQConfig,
    topic: str,
    topic_name: str,
    group: str,
    target: str,
    partitions: list[int] | None,
    error: type[Exception],
) -> None:
    with pytest.raises(error):
        Admin(mq_config, r).set_position(
            topic_name, group, PositionTarget.parse(target), partitions
        )
    assert _group(r, topic)["last-delivered-id"] == b"3000-0"


@pytest.mark.parametrize("text", ["id:12-x", "time:yesterday", "time:", "middle", "latest:1"])
def test_malformed_targets(text: str) -> None:
    with pytest.raises((InvalidArgumentError, InvalidIdError)):
        PositionTarget.parse(text)
