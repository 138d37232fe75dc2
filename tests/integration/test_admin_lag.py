"""Admin.lag against a real Redis: exact lag, NULL-lag fallback, lag in time, totals."""

from __future__ import annotations

import pytest
import redis

from mqcore.admin import Admin
from mqcore.config import MQConfig
from mqcore.errors import InvalidArgumentError, UnknownGroupError, UnknownTopicError
from mqcore.models import LagExactness
from tests.integration.raw_java import add_messages, create_topic

pytestmark = pytest.mark.redis


def _read(r: redis.Redis, key: str, group: str, n: int) -> list[str]:
    reply = r.xreadgroup(group, "c1", {key: ">"}, count=n)
    return [e[0].decode() for e in reply[0][1]] if reply else []


def test_exact_lag_and_totals(r: redis.Redis, mq_config: MQConfig) -> None:
    keys = mq_config.keys
    create_topic(r, keys, "orders", 3, groups=("g1", "g2"))
    add_messages(r, keys, "orders", 0, 10)
    add_messages(r, keys, "orders", 1, 4)
    _read(r, keys.partition("orders", 0), "g1", 6)
    lags = Admin(mq_config, r).lag("orders")
    assert [g.group for g in lags] == ["g1", "g2"]
    g1 = lags[0]
    assert g1.lag == 4 + 4
    assert g1.pending == 6
    assert g1.lag_exact
    p0 = g1.partitions[0]
    assert (p0.lag, p0.pending, p0.exactness, p0.length) == (4, 6, LagExactness.EXACT, 10)
    assert p0.lag_ms is not None
    assert p0.lag_ms >= 0
    assert p0.oldest_pending_ms is not None
    assert g1.partitions[2].lag == 0
    assert g1.partitions[2].lag_ms == 0
    assert lags[1].lag == 14
    only = Admin(mq_config, r).lag("orders", group="g2")
    assert [g.group for g in only] == ["g2"]


def test_null_lag_falls_back_to_a_count(r: redis.Redis, mq_config: MQConfig) -> None:
    keys = mq_config.keys
    create_topic(r, keys, "t", 1, groups=("g",))
    ids = add_messages(r, keys, "t", 0, 8)
    _read(r, keys.partition("t", 0), "g", 2)
    r.xdel(keys.partition("t", 0), ids[5])  # tombstone after the group's position: lag NULL
    assert r.xinfo_groups(keys.partition("t", 0))[0]["lag"] is None
    part = Admin(mq_config, r).lag("t")[0].partitions[0]
    assert part.lag == 5
    assert part.exactness == LagExactness.COUNTED
    assert part.lag_exact
    assert "counted" in part.lag_reason


def test_null_lag_count_is_capped_and_says_so(
    r: redis.Redis, mq_config: MQConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    import mqcore.lag as lag_mod

    keys = mq_config.keys
    create_topic(r, keys, "t", 1, groups=())
    add_messages(r, keys, "t", 0, 30)
    r.xgroup_create(keys.partition("t", 0), "late", id="$")
    ids = add_messages(r, keys, "t", 0, 25)
    r.xgroup_setid(keys.partition("t", 0), "late", id=ids[0])
    r.xdel(keys.partition("t", 0), ids[3])
    monkeypatch.setattr(lag_mod, "COUNT_PAGE", 5)
    monkeypatch.setattr(lag_mod, "LAG_COUNT_CAP", 10)
    part = Admin(mq_config, r).lag("t")[0].partitions[0]
    assert part.exactness == LagExactness.APPROXIMATE
    assert not part.lag_exact
    assert part.lag is not None
    assert part.lag >= 10


def test_unknown_topic_group_and_bad_names(r: redis.Redis, mq_config: MQConfig) -> None:
    admin = Admin(mq_config, r)
    with pytest.raises(UnknownTopicError):
        admin.lag("nope")
    create_topic(r, mq_config.keys, "t", 1, groups=("g",))
    with pytest.raises(UnknownGroupError):
        admin.lag("t", group="other")
    with pytest.raises(InvalidArgumentError):
        admin.lag("bad:name")
