import time

import pytest
import redis

from mqcore.cli import main
from mqcore.config import MQConfig
from mqcore.errors import InvalidArgumentError, UnknownTopicError
from mqcore.producer import Producer
from mqcore.retention.trim import trim_topic
from mqcore.topics import DEFAULT_GROUP, Topics

pytestmark = pytest.mark.redis


@pytest.fixture
def topics(mq_config: MQConfig) -> Topics:
    return Topics(mq_config)


def _group_names(r: redis.Redis, key: str) -> set[str]:
    return {g["name"].decode() for g in r.xinfo_groups(key)}


def test_create_writes_the_java_layout(topics: Topics, r: redis.Redis) -> None:
    info = topics.create("orders", 3)
    assert (info.topic, info.partitions, info.length, info.dlq_length) == ("orders", 3, 0, 0)
    assert info.groups == [DEFAULT_GROUP]
    assert r.smembers("streaming:mq:topics:registry") == {b"orders"}
    assert r.hget("streaming:mq:topic:orders:meta", "partitionCount") == b"3"
    assert r.smembers("streaming:mq:topic:orders:partitions") == {
        f"stream:topic:orders:p:{i}".encode() for i in range(3)
    }
    for i in range(3):
        groups = r.xinfo_groups(f"stream:topic:orders:p:{i}")
        assert [(g["name"], g["last-delivered-id"]) for g in groups] == [(b"default-group", b"0-0")]


def test_create_is_idempotent_grows_and_never_shrinks(topics: Topics, r: redis.Redis) -> None:
    topics.create("t", 2, groups=["a", "b"])
    topics.create("t", 2, groups=["a"])
    assert topics.partition_count("t") == 2
    topics.create("t", 4)
    assert topics.partition_count("t") == 4
    # existing groups follow onto the new partitions
    assert _group_names(r, "stream:topic:t:p:3") == {"a", "b", DEFAULT_GROUP}
    with pytest.raises(InvalidArgumentError, match="never shrink"):
        topics.create("t", 1)
    assert topics.partition_count("t") == 4


def test_grow_gives_new_partitions_existing_groups(topics: Topics, r: redis.Redis) -> None:
    topics.create("t", 1, groups=["g1"])
    topics.ensure_group("t", "g2", start_id="$")
    info = topics.grow("t", 3)
    assert info.partitions == 3
    assert info.groups == ["g1", "g2"]
    assert _group_names(r, "stream:topic:t:p:2") == {"g1", "g2"}
    assert topics.grow("t", 2).partitions == 3  # no shrink, no error


def test_bad_input_is_refused(topics: Topics, r: redis.Redis) -> None:
    for bad in ("a:b", "", "x y", "{t}"):
        with pytest.raises(InvalidArgumentError):
            topics.create(bad)
    with pytest.raises(InvalidArgumentError):
        topics.create("t", 0)
    with pytest.raises(InvalidArgumentError):
        topics.create("t", 2, groups=["bad group"])
    assert r.dbsize() == 0
    topics.create("t")
    with pytest.raises(InvalidArgumentError, match="start id"):
        topics.ensure_group("t", "g", start_id="nope")


def test_unknown_topic(topics: Topics) -> None:
    assert not topics.exists("nope")
    for call in (
        lambda: topics.partition_count("nope"),
        lambda: topics.describe("nope"),
        lambda: topics.grow("nope", 2),
        lambda: topics.delete("nope"),
        lambda: topics.groups("nope"),
    ):
        with pytest.raises(UnknownTopicError):
            call()


def test_missing_or_invalid_meta_means_one_partition(topics: Topics, r: redis.Redis) -> None:
    r.sadd("streaming:mq:topics:registry", "java")
    assert topics.partition_count("java") == 1
    r.hset("streaming:mq:topic:java:meta", "partitionCount", "junk")
    assert topics.partition_count("java") == 1


def test_names_list_and_describe(topics: Topics, mq_config: MQConfig) -> None:
    topics.create("b", 2)
    topics.create("a", 1, groups=["x", "y"])
    with Producer(mq_config) as producer:
        for i in range(5):
            producer.send("b", f"m{i}")
    assert topics.names() == ["a", "b"]
    listed = {t.topic: t for t in topics.list()}
    assert listed["b"].length == 5
    assert listed["b"].partitions == 2
    assert listed["a"].groups == ["x", "y"]
    assert topics.describe("b") == listed["b"]


def test_delete_removes_every_key_of_the_topic(
    topics: Topics, r: redis.Redis, mq_config: MQConfig
) -> None:
    topics.create("keep", 1)
    topics.create("gone", 2, groups=["g"])
    ks = mq_config.keys
    with Producer(mq_config.with_(inline_payload_bytes=10)) as producer:
        producer.send("gone", "x" * 50)  # out of line: payload key + index
        producer.send("keep", "y")
    r.set(ks.lease("gone", "g", 1), "c1")
    r.set(ks.lease_epoch("gone", "g", 1), 3)
    r.hset(ks.consumers("gone", "g"), "c1", "{}")
    r.hset(ks.commit_frontier("gone", 0), "g", "1-0")
    r.xadd(ks.dlq("gone"), {"payload": "p"})
    r.hset(ks.dlq_replays("gone"), "1-0", "{}")
    r.zadd(ks.retry_zset("gone"), {ks.retry_item("gone", "u1"): 1})
    r.hset(ks.retry_item("gone", "u1"), "topic", "gone")
    before_keep = {k for k in r.keys("*") if b"gone" not in k}
    topics.delete("gone")
    assert set(r.keys("*")) == before_keep
    assert topics.names() == ["keep"]


def test_trim_by_maxlen_age_and_dlq_never_passes_a_groups_floor(
    topics: Topics, r: redis.Redis, redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Topics.trim trimmed MAXLEN ~ / MINID ~ past the default group at 0: it read nothing
    # and lost 500 entries. Trimming is the housekeeper's now, floor-bounded.
    topics.create("t", 1)
    key = "stream:topic:t:p:0"
    old_ms = int(time.time() * 1000) - 3_600_000
    for i in range(300):
        r.xadd(key, {"payload": "old"}, id=f"{old_ms}-{i}")
    for _ in range(300):
        r.xadd(key, {"payload": "new"})
    assert trim_topic(topics, "t", min_age_ms=60_000) == 0  # default-group is at 0
    assert trim_topic(topics, "t", maxlen=100) == 0
    assert r.xlen(key) == 600
    got = r.xreadgroup(DEFAULT_GROUP, "c", {key: ">"}, count=400)
    r.xack(key, DEFAULT_GROUP, *[e[0] for e in got[0][1]])  # read and acked 400
    assert trim_topic(topics, "t", min_age_ms=60_000) == 300
    assert trim_topic(topics, "t", maxlen=100) == 100  # the group's floor: 200 unread stay
    assert r.xlen(key) == 200
    for _ in range(250):
        r.xadd("stream:topic:t:dlq", {"payload": "d"})
    assert main(["--redis-url", redis_url, "topic", "trim", "t", "--maxlen", "0", "--dlq"]) == 0
    assert "removed 250" in capsys.readouterr().out
    assert r.xlen("stream:topic:t:dlq") == 0
    r.xadd("stream:topic:t:dlq", {"payload": "d"})
    r.xgroup_create("stream:topic:t:dlq", "dlq-group", id="0")  # a reader of the DLQ
    assert trim_topic(topics, "t", maxlen=0, dlq=True) == 0
    with pytest.raises(InvalidArgumentError):
        trim_topic(topics, "t")
    with pytest.raises(InvalidArgumentError):
        trim_topic(topics, "t", maxlen=-1)
    with pytest.raises(UnknownTopicError):
        trim_topic(topics, "nope", maxlen=1)
