"""Admin.pending: group-wide PEL across partitions, sorted, filtered, paged, bounded."""

from __future__ import annotations

import pytest
import redis

from mqcore.admin import Admin
from mqcore.config import MQConfig
from mqcore.errors import InvalidArgumentError, UnknownGroupError, UnknownPartitionError
from tests.integration.raw_java import add_messages, create_topic

pytestmark = pytest.mark.redis


@pytest.fixture
def pel(r: redis.Redis, mq_config: MQConfig) -> dict[str, list[str]]:
    """Two partitions; entries delivered 1..3 times to consumers a/b."""
    keys = mq_config.keys
    create_topic(r, keys, "t", 2, groups=("g",))
    ids = {"0": add_messages(r, keys, "t", 0, 6), "1": add_messages(r, keys, "t", 1, 4)}
    for p in (0, 1):
        r.xreadgroup("g", "a" if p == 0 else "b", {keys.partition("t", p): ">"})
    # redeliver some: each XCLAIM bumps the delivery counter and resets idle
    r.xclaim(keys.partition("t", 0), "g", "a", 0, ids["0"][:2])
    r.xclaim(keys.partition("t", 0), "g", "a", 0, ids["0"][:1])
    r.xclaim(keys.partition("t", 1), "g", "b", 0, ids["1"][3:])
    return ids


def test_sort_by_deliveries_desc_across_partitions(
    r: redis.Redis, mq_config: MQConfig, pel: dict[str, list[str]]
) -> None:
    page = Admin(mq_config, r).pending("t", "g", sort="count", limit=3)
    assert [(e.partition, e.id, e.deliveries) for e in page.entries] == [
        (0, pel["0"][0], 3),
        (0, pel["0"][1], 2),
        (1, pel["1"][3], 2),
    ]
    assert page.scanned == 10
    assert page.total == 10
    assert page.complete


def test_sort_by_idle_asc_and_desc(
    r: redis.Redis, mq_config: MQConfig, pel: dict[str, list[str]]
) -> None:
    admin = Admin(mq_config, r)
    desc = admin.pending("t", "g", sort="idle", order="desc", limit=10).entries
    asc = admin.pending("t", "g", sort="idle", order="asc", limit=10).entries
    assert [e.idle_ms for e in desc] == sorted((e.idle_ms for e in desc), reverse=True)
    assert [e.idle_ms for e in asc] == sorted(e.idle_ms for e in asc)
    assert len(desc) == 10


def test_filters_and_offset(r: redis.Redis, mq_config: MQConfig, pel: dict[str, list[str]]) -> None:
    admin = Admin(mq_config, r)
    only_b = admin.pending("t", "g", consumer="b")
    assert {e.consumer for e in only_b.entries} == {"b"}
    assert only_b.total == 4
    p0 = admin.pending("t", "g", partition=0)
    assert {e.partition for e in p0.entries} == {0}
    assert p0.total == 6
    poison = admin.pending("t", "g", min_deliveries=2, sort="count")
    assert poison.total == 3
    assert all(e.deliveries >= 2 for e in poison.entries)
    first = admin.pending("t", "g", sort="count", limit=2)
    second = admin.pending("t", "g", sort="count", limit=2, offset=2)
    assert [e.id for e in second.entries] == [
        e.id for e in admin.pending("t", "g", sort="count", limit=4).entries[2:]
    ]
    assert not {e.id for e in first.entries} & {e.id for e in second.entries}


def test_pages_and_bound(
    r: redis.Redis, mq_config: MQConfig, pel: dict[str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    import mqcore.admin.pending as admin_mod

    monkeypatch.setattr(admin_mod, "PENDING_PAGE", 3)
    admin = Admin(mq_config, r)
    full = admin.pending("t", "g", sort="count", limit=3)
    assert full.scanned == 10
    assert full.entries[0].deliveries == 3
    bounded = admin.pending("t", "g", max_scan=4)
    assert not bounded.complete
    assert bounded.scanned < 10


def test_bad_input(r: redis.Redis, mq_config: MQConfig, pel: dict[str, list[str]]) -> None:
    admin = Admin(mq_config, r)
    with pytest.raises(InvalidArgumentError):
        admin.pending("t", "g", sort="age")
    with pytest.raises(InvalidArgumentError):
        admin.pending("t", "g", limit=0)
    with pytest.raises(UnknownPartitionError):
        admin.pending("t", "g", partition=5)
    with pytest.raises(UnknownGroupError):
        admin.pending("t", "nogroup")


def test_claim_and_message(r: redis.Redis, mq_config: MQConfig, pel: dict[str, list[str]]) -> None:
    admin = Admin(mq_config, r)
    claimed = admin.claim("t", "g", 0, pel["0"][4:6], "operator")
    assert claimed == pel["0"][4:6]
    assert {e.consumer for e in admin.pending("t", "g", consumer="operator").entries} == {
        "operator"
    }
    msg = admin.message("t", 0, pel["0"][4])
    assert msg.payload == "m4"
    assert msg.headers["partitionId"] == "0"
    assert msg.max_retries == 3
