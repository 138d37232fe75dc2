"""A group delete never blocks Redis: a forced delete of a group with a big pending entries
list acks them in bounded chunks, a partition at a time, before its ``XGROUP DESTROY``;
an unforced one is still refused; a delete interrupted midway is repeated and completes.
Against a real Redis, its SLOWLOG recording every command."""

from __future__ import annotations

import pytest
import redis

from mqcore.config import MQConfig
from mqcore.errors import InUseError, InvalidArgumentError, UnknownGroupError
from mqcore.topics import GROUP_DELETE_CHUNK, Topics

pytestmark = [pytest.mark.redis]
G = "default-group"
BIG = 20_000
SLOW_US = 5000  # the most any command of the delete may hold Redis
DELETE_COMMANDS = {b"evalsha", b"eval", b"xgroup", b"xack", b"xpending", b"xinfo", b"exists"}


def pending(r: redis.Redis, key: str, group: str = G) -> int:
    return next(int(g["pending"]) for g in r.xinfo_groups(key) if g["name"].decode() == group)


def fill_pending(r: redis.Redis, key: str, count: int) -> None:
    """``count`` entries delivered to the group and never acked (pipelined XADD, one read)."""
    pipe = r.pipeline(transaction=False)
    for i in range(count):
        pipe.xadd(key, {"payload": "x"}, id=f"{i + 1}-0")
    pipe.execute()
    r.xreadgroup(G, "c1", {key: ">"}, count=count)
    assert pending(r, key) == count


def test_forced_delete_of_a_big_pending_list_is_chunked(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    topics = Topics(mq_config)
    topics.create("orders", 2)
    key = mq_config.keys.partition("orders", 0)
    fill_pending(r, key, BIG)
    epoch = mq_config.keys.lease_epoch("orders", G, 0)
    r.set(epoch, 7)
    with pytest.raises(InUseError, match=f"{BIG} pending"):
        topics.delete_group("orders", G)
    assert pending(r, key) == BIG  # refused: nothing written
    with pytest.raises(InvalidArgumentError):
        topics.drain_group_pending("orders", G, 0, GROUP_DELETE_CHUNK + 1)
    assert topics.drain_group_pending("orders", G, 0) == GROUP_DELETE_CHUNK
    assert pending(r, key) == BIG - GROUP_DELETE_CHUNK

    before = r.config_get("slowlog-*")
    r.config_set("slowlog-log-slower-than", 0)  # every command, with its duration
    r.config_set("slowlog-max-len", 100_000)
    r.slowlog_reset()
    try:
        done = topics.delete_group("orders", G, force=True)
        log = r.slowlog_get(100_000)
    finally:
        r.config_set("slowlog-log-slower-than", before["slowlog-log-slower-than"])
        r.config_set("slowlog-max-len", before["slowlog-max-len"])
        r.slowlog_reset()
    assert (done.deleted, done.partitions, done.pending) == (True, 2, BIG - GROUP_DELETE_CHUNK)
    assert G not in topics.groups("orders")
    assert r.get(epoch) == b"7"  # a group created again still fences stale writers

    calls = [e for e in log if e["command"].split()[0].lower() in DELETE_COMMANDS]
    slow = [(e["duration"], e["command"][:80]) for e in calls if e["duration"] >= SLOW_US]
    assert not slow, slow
    scripts = [e["command"].split() for e in calls if e["command"].lower().startswith(b"evalsha")]
    drains = [c for c in scripts if c[2] == b"1"]  # one key: the drain's stream
    destroys = [c for c in scripts if c[2] == b"4"]  # four keys: the per-partition delete
    assert len(drains) >= (BIG - GROUP_DELETE_CHUNK) // GROUP_DELETE_CHUNK
    assert all(int(c[-1]) <= GROUP_DELETE_CHUNK for c in drains)  # entries acked per call
    assert all(int(c[-1]) == GROUP_DELETE_CHUNK for c in destroys)  # most destroyed with it
    # partition 0: "drain first", then done; partition 1: done (and a first NOSCRIPT try)
    assert len(destroys) >= 3


def test_delete_interrupted_midway_is_repeated(r: redis.Redis, mq_config: MQConfig) -> None:
    """A forced delete dying after partition 0 and one chunk of partition 1: an unforced
    repeat is refused on what is left, a forced one completes; the epochs stay."""

    class Dying(Topics):
        calls = 0

        def drain_group_pending(
            self, topic: str, group: str, partition: int, count: int = GROUP_DELETE_CHUNK
        ) -> int:
            Dying.calls += 1
            if Dying.calls == 6:  # partition 0: 1000, 1000, 1000, 0; partition 1: 1000
                raise redis.ConnectionError("the process died here")
            return super().drain_group_pending(topic, group, partition, count)

    topics = Topics(mq_config)
    topics.create("orders", 2)
    keys = [mq_config.keys.partition("orders", i) for i in range(2)]
    for key in keys:
        fill_pending(r, key, 3 * GROUP_DELETE_CHUNK)
    r.set(mq_config.keys.lease("orders", G, 1), "c1")
    r.set(mq_config.keys.lease_epoch("orders", G, 1), 3)
    with pytest.raises(redis.ConnectionError):
        Dying(mq_config).delete_group("orders", G, force=True)
    assert [g["name"] for g in r.xinfo_groups(keys[0])] == []
    assert pending(r, keys[1]) == 2 * GROUP_DELETE_CHUNK
    assert r.exists(mq_config.keys.lease("orders", G, 1))

    with pytest.raises(InUseError, match=f"1 leased partition.*{2 * GROUP_DELETE_CHUNK} pending"):
        topics.delete_group("orders", G)
    assert pending(r, keys[1]) == 2 * GROUP_DELETE_CHUNK
    done = topics.delete_group("orders", G, force=True)
    assert (done.partitions, done.leased, done.pending) == (1, 1, 2 * GROUP_DELETE_CHUNK)
    assert G not in topics.groups("orders")
    assert not r.exists(mq_config.keys.lease("orders", G, 1))
    assert not r.exists(mq_config.keys.consumers("orders", G))
    assert r.get(mq_config.keys.lease_epoch("orders", G, 1)) == b"3"
    assert r.xlen(keys[1]) == 3 * GROUP_DELETE_CHUNK  # no entry deleted
    with pytest.raises(UnknownGroupError):
        topics.delete_group("orders", G, force=True)


def test_lease_taken_during_the_delete_is_seen(r: redis.Redis, mq_config: MQConfig) -> None:
    """The check and the delete are one script a partition: a lease taken on a partition
    not yet done refuses the unforced delete there, the partitions before it done."""
    topics = Topics(mq_config)
    topics.create("orders", 2)

    class Racing(Topics):
        calls = 0

        def partition_count(self, topic: str) -> int:
            Racing.calls += 1
            if Racing.calls == 2:  # the check read it first; now the per-partition loop
                r.set(mq_config.keys.lease("orders", G, 1), "c9")
            return super().partition_count(topic)

    with pytest.raises(InUseError, match="partition 1 during the delete"):
        Racing(mq_config).delete_group("orders", G)
    assert G in topics.groups("orders")
    assert [g["name"] for g in r.xinfo_groups(mq_config.keys.partition("orders", 0))] == []
    r.delete(mq_config.keys.lease("orders", G, 1))
    assert topics.delete_group("orders", G).partitions == 1
