"""The retention view on a real redis-server: floors, each rule's next delete, unread at risk.

The scenario of a shared deployment: a Java group (live lease, Kryo-written commit
frontier) far ahead of a Python group that wrote no frontier. Java's frontier trim
would delete entries the Python group has not read; the view says so, and mqcore's
own housekeeper holds back at the Python group's floor.
"""

from __future__ import annotations

import pytest
import redis

from mqcore.config import MQConfig
from mqcore.retention import JavaRetention, RetentionPolicy, housekeep
from mqcore.retention.view import topic_retention
from tests.integration.raw_java import create_topic

pytestmark = pytest.mark.redis
JAVA, PY = "java-group", "python-group"


def kryo_string(text: str) -> bytes:
    """Redisson's Kryo5Codec bytes of a short ASCII string (class id 1 + 2, last byte | 0x80)."""
    body = text.encode("ascii")
    return b"\x03" + body[:-1] + bytes([body[-1] | 0x80])


@pytest.fixture
def shared(r: redis.Redis, mq_config: MQConfig) -> str:
    keys = mq_config.keys
    create_topic(r, keys, "orders", 1, groups=(JAVA, PY))
    key = keys.partition("orders", 0)
    pipe = r.pipeline(transaction=False)
    for i in range(4_000):
        pipe.xadd(key, {"payload": f"m{i}"}, id=f"{1_000 + i}-0")
    pipe.execute()
    java = r.xreadgroup(JAVA, "j1", {key: ">"}, count=3_700)[0][1]
    r.xack(key, JAVA, *[e[0] for e in java])
    py = r.xreadgroup(PY, "p1", {key: ">"}, count=1_002)[0][1]
    r.xack(key, PY, *[e[0] for e in py[:1_000]])  # two still pending
    r.hset(keys.commit_frontier("orders", 0), kryo_string(JAVA), kryo_string("4699-0"))
    r.set(keys.lease("orders", JAVA, 0), "java-worker-1", px=30_000)
    return key


def test_java_frontier_trim_puts_the_python_groups_unread_entries_at_risk(
    r: redis.Redis, mq_config: MQConfig, shared: str
) -> None:
    java = JavaRetention.from_mapping({"maxlen": 2_000, "frontier_trim": True})
    (part,) = topic_retention(r, mq_config.keys, "orders", RetentionPolicy(), java)
    floors = {g.group: g for g in part.groups}
    assert floors[PY].floor_id == "2000-0"  # its lowest pending entry
    assert (floors[PY].unread, floors[PY].unread_exact) == (3_000, True)
    assert floors[JAVA].frontier_id == "4699-0"
    assert floors[JAVA].lease_live
    rules = {x.rule: x for x in part.rules}
    # entries 2000-0 .. 4698-0 would go: the 2 pending and 2,697 unread ones (capped count)
    assert rules["java-frontier"].at_risk[PY] >= 2_000
    assert rules["java-maxlen"].would_delete == 2_000
    assert rules["java-maxlen"].at_risk == {PY: 1_000}
    assert part.at_risk


def test_mqcore_housekeeper_holds_back_and_loses_nothing(
    r: redis.Redis, mq_config: MQConfig, shared: str
) -> None:
    policy = RetentionPolicy.build(maxlen=1_000, consumed=True)
    (part,) = topic_retention(r, mq_config.keys, "orders", policy)
    rules = {x.rule: x for x in part.rules}
    assert (rules["maxlen"].would_delete, rules["maxlen"].held_by) == (1_000, PY)
    assert rules["maxlen"].held == 2_000
    assert rules["maxlen"].at_risk == {}
    (trim,) = housekeep(r, mq_config.keys, policy, topics=["orders"])
    assert (trim.deleted, trim.held_by) == (1_000, PY)
    # every entry the Python group has not acked is still there
    assert r.xpending(shared, PY)["pending"] == 2
    left = r.xrange(shared, "-", "+", count=1)[0][0]
    assert left == b"2000-0"
    assert r.xlen(shared) == 3_000


def test_cli_twins(
    r: redis.Redis, redis_url: str, shared: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from mqcore.cli import main

    code = main(["--redis-url", redis_url, "--json", "retention", "orders", "--java-frontier"])
    view = json.loads(capsys.readouterr().out)
    assert code == 0
    assert view["partitions"][0]["at_risk"] is True
    code = main(["--redis-url", redis_url, "housekeep", "--maxlen", "10", "--dry-run", "--json"])
    dry = json.loads(capsys.readouterr().out)
    assert (code, dry["deleted"], dry["partitions"][0]["held_by"]) == (0, 1_000, PY)
    assert r.xlen(shared) == 4_000
    code = main(["--redis-url", redis_url, "housekeep", "--maxlen", "10"])
    assert code == 2  # not a terminal, no --yes: refused
    assert "confirmation" in capsys.readouterr().err
    code = main(["--redis-url", redis_url, "housekeep", "--topic", "nope", "--consumed", "--yes"])
    assert code == 2
    assert "unknown topic" in capsys.readouterr().err
    code = main(["--redis-url", redis_url, "housekeep", "--consumed", "--yes", "--json"])
    done = json.loads(capsys.readouterr().out)
    assert (code, done["deleted"]) == (0, 1_000)
    assert r.xlen(shared) == 3_000
