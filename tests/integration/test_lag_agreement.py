"""The live admin read and the collector's snapshot compute lag one way (mqcore.lag).

Before the lag concept had one home, a partition whose lag Redis reports as NULL
was counted up to 10,000 entries by ``Admin.lag`` but only one page of 1,000 by
the snapshot: the topic page said "approximate, at least 1000" while the API
said 5,000 counted.
"""

from __future__ import annotations

import pytest
import redis

from mqcore.admin import Admin
from mqcore.config import MQConfig
from mqcore.models import LagExactness
from tests.integration.raw_java import add_messages, create_topic

pytestmark = pytest.mark.redis


def _null_lag_partition(r: redis.Redis, mq_config: MQConfig, waiting: int) -> None:
    keys = mq_config.keys
    create_topic(r, keys, "t", 1, groups=("g",))
    ids = add_messages(r, keys, "t", 0, waiting + 3)
    key = keys.partition("t", 0)
    r.xgroup_setid(key, "g", id=ids[1])  # two delivered, waiting + 1 after the position
    r.xdel(key, ids[2])  # a tombstone after the position: Redis reports NULL lag
    assert r.xinfo_groups(key)[0]["lag"] is None


def test_null_lag_of_5000_waiting_is_counted_the_same_by_both(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    _null_lag_partition(r, mq_config, 5000)
    admin = Admin(mq_config, r)
    live = admin.lag("t")[0]
    snap = admin.snapshot(topics=["t"]).topics[0].groups[0]
    for group in (live, snap):
        part = group.partitions[0]
        assert (part.lag, part.exactness, part.lag_exact) == (5000, LagExactness.COUNTED, True)
        assert part.lag_reason == live.partitions[0].lag_reason
        assert (group.lag, group.lag_exact) == (5000, True)


def test_null_lag_beyond_the_cap_is_a_lower_bound_in_both(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    _null_lag_partition(r, mq_config, 10_500)
    admin = Admin(mq_config, r)
    for group in (admin.lag("t")[0], admin.snapshot(topics=["t"]).topics[0].groups[0]):
        part = group.partitions[0]
        assert part.exactness == LagExactness.APPROXIMATE
        assert not part.lag_exact
        assert part.lag == 10_000
        assert "at least 10000" in part.lag_reason
