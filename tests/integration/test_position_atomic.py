"""Position moves over several partitions are all or none, a rewind lowers the commit frontier
(Java's frontier trim then deletes nothing the group reads again), and a pipeline's group is
moved only when forced."""

from __future__ import annotations

import pytest
import redis

from mqcore.acks import ack
from mqcore.admin import Admin, PositionTarget
from mqcore.admin import position as position_module
from mqcore.checkpoints import CheckpointStore
from mqcore.codec import kryo
from mqcore.config import MQConfig
from mqcore.errors import ConcurrentChangeError, PartialMoveError, PipelineGroupError
from mqcore.retention.view import frontier_ids
from tests.integration.raw_java import create_topic
from tests.integration.test_commit_frontier import java_housekeeper

pytestmark = pytest.mark.redis
TOPIC, JAVA, PY = "orders", "java-group", "python-group"


def _last(r: redis.Redis, key: str, group: str) -> str:
    row = next(g for g in r.xinfo_groups(key) if g["name"].decode() == group)
    return str(row["last-delivered-id"].decode())


@pytest.mark.parametrize("encoding", ["plain", "java-kryo"])
@pytest.mark.parametrize("pending", [False, True])
def test_a_rewind_lowers_the_frontier_so_java_trims_none_of_it(
    r: redis.Redis, redis_url: str, encoding: str, pending: bool
) -> None:
    cfg = MQConfig.from_url(redis_url, encoding=encoding)
    create_topic(r, cfg.keys, TOPIC, 1, groups=(JAVA, PY))
    key = cfg.keys.partition(TOPIC, 0)
    pipe = r.pipeline(transaction=False)
    for i in range(1000):
        pipe.xadd(key, {"payload": f"m{i}"}, id=f"{1000 + i}-0")
    pipe.execute()
    ids = [e[0].decode() for e in r.xreadgroup(PY, "c1", {key: ">"}, count=1000)[0][1]]
    r.xreadgroup(JAVA, "j1", {key: ">"}, count=1000)  # Java's group first: the floor is PY's
    r.xack(key, JAVA, *ids)
    held = ids[500:] if pending else []  # a group with pending entries below its end
    ack(r, cfg.keys, topic=TOPIC, group=PY, partition=0, ids=ids[: len(ids) - len(held)],
        epoch=None, frontier=encoding)  # fmt: skip
    front = cfg.keys.commit_frontier(TOPIC, 0)
    enc = kryo.encode if encoding == "java-kryo" else (lambda s: s.encode())
    r.hset(front, enc(JAVA), enc(ids[-1]))  # Java's own group, leased, at the end
    r.set(cfg.keys.lease(TOPIC, JAVA, 0), "java-worker-1", px=60_000)
    r.set(cfg.keys.lease(TOPIC, PY, 0), "java-worker-2", px=60_000)
    Admin(cfg, r).set_position(TOPIC, PY, PositionTarget.of("id", "1200-0"))
    # (the lowest pending entry, 1500-0, is above the new position: the position it is)
    assert frontier_ids(r.hgetall(front)) == {JAVA: "1200-0", PY: "1200-0"}
    raw = r.hgetall(front)
    if encoding == "java-kryo":
        assert raw[kryo.encode(JAVA)] == kryo.encode("1200-0")  # Java reads it back
    Admin(cfg, r).set_position(TOPIC, PY, PositionTarget.of("earliest"))
    assert frontier_ids(r.hgetall(front)) == {JAVA: "0-0", PY: "0-0"}
    java_housekeeper(r, cfg, 0)
    assert r.xlen(key) == 1000  # every rewound entry is still there
    got = r.xreadgroup(PY, "c2", {key: ">"}, count=2000)
    assert len(got[0][1]) == 1000


def test_frontier_lowered_to_the_lowest_pending_entry(r: redis.Redis, redis_url: str) -> None:
    cfg = MQConfig.from_url(redis_url, encoding="plain")
    create_topic(r, cfg.keys, TOPIC, 1, groups=(PY,))
    key = cfg.keys.partition(TOPIC, 0)
    for i in range(10):
        r.xadd(key, {"payload": str(i)}, id=f"{1000 + i}-0")
    r.xreadgroup(PY, "c1", {key: ">"}, count=10)
    r.xack(key, PY, *[f"{1000 + i}-0" for i in range(10) if i != 3])
    r.hset(cfg.keys.commit_frontier(TOPIC, 0), JAVA, "1009-0")
    Admin(cfg, r).set_position(TOPIC, PY, PositionTarget.of("id", "1006-0"))
    # 1003-0 is still pending below the new position: the frontier goes down to it
    assert frontier_ids(r.hgetall(cfg.keys.commit_frontier(TOPIC, 0))) == {JAVA: "1003-0"}


@pytest.fixture
def three(r: redis.Redis, mq_config: MQConfig) -> list[str]:
    create_topic(r, mq_config.keys, TOPIC, 3, groups=(PY,))
    keys = [mq_config.keys.partition(TOPIC, p) for p in range(3)]
    for key in keys:
        for ms in (1000, 2000, 3000, 4000):
            r.xadd(key, {"payload": "x"}, id=f"{ms}-0")
        r.xreadgroup(PY, "c1", {key: ">"}, count=4)
    return keys


def _racing(
    r: redis.Redis, monkeypatch: pytest.MonkeyPatch, key: str, partition: int
) -> dict[str, int]:
    """Partition ``partition`` changes under every count (an ack-delete on a busy partition)."""
    real = position_module.plan_partition
    calls = {"n": 0}
    for ms in range(5000, 5010):
        r.xadd(key, {"payload": "y"}, id=f"{ms}-0")

    def racing(client, keys, topic, group, p, target):  # type: ignore[no-untyped-def]
        found = real(client, keys, topic, group, p, target)
        if p == partition:
            calls["n"] += 1
            r.xdel(key, f"{5000 + calls['n']}-0")  # acked and deleted after the count
        return found

    monkeypatch.setattr(position_module, "plan_partition", racing)
    return calls


def test_a_partition_that_keeps_changing_leaves_no_partition_moved(
    r: redis.Redis, mq_config: MQConfig, three: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _racing(r, monkeypatch, three[2], 2)
    with pytest.raises(ConcurrentChangeError, match=r"partitions \[2\] kept changing"):
        Admin(mq_config, r).set_position(TOPIC, PY, PositionTarget.parse("id:2000-0"))
    assert calls["n"] == position_module.ATTEMPTS
    assert [_last(r, key, PY) for key in three] == ["4000-0"] * 3  # none moved


def test_a_change_is_recounted_and_the_whole_set_moves(
    r: redis.Redis, mq_config: MQConfig, three: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = position_module.plan_partition
    seen: list[int] = []

    def once(client, keys, topic, group, p, target):  # type: ignore[no-untyped-def]
        found = real(client, keys, topic, group, p, target)
        seen.append(p)
        if seen.count(1) == 1 and p == 1:
            r.xdel(three[1], "1000-0")  # an ack-delete after the count of partition 1
        return found

    monkeypatch.setattr(position_module, "plan_partition", once)
    done = Admin(mq_config, r).set_position(TOPIC, PY, PositionTarget.parse("id:2000-0"))
    assert seen == [0, 1, 2, 1]  # only the partition that changed is counted again
    assert [_last(r, key, PY) for key in three] == ["2000-0"] * 3
    assert [m.lag_after for m in done.moves] == [2, 2, 2]
    assert [g["lag"] for key in three for g in r.xinfo_groups(key)] == [2, 2, 2]


def test_chunks_beyond_one_script_name_what_moved(
    r: redis.Redis, mq_config: MQConfig, three: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(position_module, "CHUNK", 2)  # partitions 0-1, then 2
    _racing(r, monkeypatch, three[2], 2)
    with pytest.raises(PartialMoveError) as caught:
        Admin(mq_config, r).set_position(TOPIC, PY, PositionTarget.parse("id:2000-0"))
    assert (caught.value.moved, caught.value.not_moved) == ([0, 1], [2])
    assert [_last(r, key, PY) for key in three] == ["2000-0", "2000-0", "4000-0"]


def test_a_pipeline_group_moves_only_when_forced(
    r: redis.Redis, mq_config: MQConfig, three: list[str]
) -> None:
    store = CheckpointStore(mq_config, r)
    r.sadd(mq_config.keys.pipelines(), "enrich")
    r.hset(mq_config.keys.checkpoint_meta("enrich"),
           mapping={"topic": TOPIC, "group": PY, "completed": 1})  # fmt: skip
    assert store.summaries()[0]["group"] == PY
    admin = Admin(mq_config, r)
    assert admin.plan_position(TOPIC, PY, PositionTarget.parse("earliest")).pipelines == ("enrich",)
    with pytest.raises(PipelineGroupError, match="pipeline enrich"):
        admin.set_position(TOPIC, PY, PositionTarget.parse("earliest"))
    assert [_last(r, key, PY) for key in three] == ["4000-0"] * 3
    admin.set_position(TOPIC, PY, PositionTarget.parse("earliest"), force=True)
    assert [_last(r, key, PY) for key in three] == ["0-0"] * 3
