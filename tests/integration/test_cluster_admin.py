"""Admin and DLQ core scenarios on the 3-node Redis Cluster fixture (hash-tagged keys)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from mqcore.admin import Admin
from mqcore.config import MQConfig
from mqcore.dlq import DeadLetters
from tests.integration.raw_java import add_messages, create_topic, java_dlq_letter
from tests.snapshot_parts import builtins

pytestmark = pytest.mark.cluster


@pytest.fixture
def rc(cluster_config: MQConfig) -> Iterator[Any]:
    client = cluster_config.client()
    yield client
    client.close()


def test_lag_pending_snapshot_and_replay_on_cluster(rc: Any, cluster_config: MQConfig) -> None:
    keys = cluster_config.keys
    assert keys.hash_tags
    topics = ["alpha", "beta", "gamma", "delta"]  # spread over slots of different nodes
    for t in topics:
        create_topic(rc, keys, t, 3, groups=("g",))
        add_messages(rc, keys, t, 0, 5)
        add_messages(rc, keys, t, 2, 2)
        rc.xreadgroup("g", "c1", {keys.partition(t, 0): ">"}, count=3)
    admin = Admin(cluster_config, rc)
    [group] = admin.lag("alpha")
    assert (group.lag, group.pending) == (4, 3)
    page = admin.pending("beta", "g", sort="count")
    assert (page.total, page.scanned) == (3, 3)
    snap = admin.snapshot(batch=7)
    assert [t.topic for t in snap.topics] == sorted(topics)
    for t in snap.topics:
        assert t.error is None
        assert (t.length, t.groups[0].lag, t.groups[0].pending) == (7, 4, 3)
    letter = java_dlq_letter(rc, keys, "gamma", 2, "bad", key="k")
    dlq = DeadLetters(cluster_config, rc)
    assert dlq.page("gamma").letters[0].id == letter
    res = dlq.replay("gamma", letter, by="op")
    assert (res.replayed, res.partition) == (True, 2)
    assert dlq.replay("gamma", letter).reason == "already-replayed"
    assert rc.xlen(keys.partition("gamma", 2)) == 3


def test_a_move_over_every_partition_and_an_emptied_partition_on_cluster(
    rc: Any, cluster_config: MQConfig
) -> None:
    """One script moves every partition of a topic (one slot) and lowers their frontiers;
    an emptied partition's last id is its last-generated id in the snapshot."""
    from mqcore.admin import PositionTarget
    from mqcore.admin.partitions import last_ids
    from mqcore.retention.view import frontier_ids

    keys = cluster_config.keys
    create_topic(rc, keys, "orders", 3, groups=("g", "spark"))
    for p in range(3):
        add_messages(rc, keys, "orders", p, 4)
        rc.xreadgroup("g", "c1", {keys.partition("orders", p): ">"}, count=4)
        rc.hset(keys.commit_frontier("orders", p), "java", "9999999999999-0")
    done = Admin(cluster_config, rc).set_position("orders", "g", PositionTarget.parse("earliest"))
    assert [m.lag_after for m in done.moves] == [4, 4, 4]
    for p in range(3):
        assert frontier_ids(rc.hgetall(keys.commit_frontier("orders", p))) == {"java": "0-0"}
    stream = keys.partition("orders", 1)
    ids = [e[0] for e in rc.xrange(stream)]
    rc.xdel(stream, *ids)
    last = ids[-1].decode()
    snap = builtins(Admin(cluster_config, rc).snapshot())["topics"][0]
    assert snap.get("error") is None, snap
    assert snap["partition_last_ids"][1] == last
    assert last_ids(rc, keys, "orders", [1]) == {1: last}
