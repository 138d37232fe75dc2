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
from tests.snapshot_parts import builtins

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


def _one_pending_far_back(r: redis.Redis, mq_config: MQConfig, entries: int) -> str:
    """A group that read every entry and acked all but the first: lag 0, one pending."""
    keys = mq_config.keys
    create_topic(r, keys, "orders", 1, groups=(PY,))
    key = keys.partition("orders", 0)
    pipe = r.pipeline(transaction=False)
    for i in range(entries):
        pipe.xadd(key, {"payload": f"m{i}"}, id=f"{1_000 + i}-0")
    pipe.execute()
    got = r.xreadgroup(PY, "p1", {key: ">"}, count=entries)[0][1]
    r.xack(key, PY, *[e[0] for e in got[1:]])
    return key


def test_a_pending_entry_past_javas_maxlen_is_at_risk(r: redis.Redis, mq_config: MQConfig) -> None:
    # the finding: one pending entry 3,000 back, lag 0, Java maxlen 2,500; the view counted
    # 2,000 (capped), showed no risk, and Java's trim then removed the pending entry
    key = _one_pending_far_back(r, mq_config, 3_000)
    java = JavaRetention.from_mapping({"maxlen": 2_500, "frontier_trim": False})
    (part,) = topic_retention(r, mq_config.keys, "orders", RetentionPolicy(), java)
    (group,) = part.groups
    assert (group.floor_id, group.lag, group.pending) == ("1000-0", 0, 1)
    assert (group.unread, group.unread_exact) == (3_000, True)
    (rule,) = part.rules
    assert rule.at_risk == {PY: 500}
    assert part.at_risk
    (threat,) = rule.threats
    assert (threat.lost, threat.exact, threat.leased) == (500, True, False)
    r.xtrim(key, maxlen=2_500, approximate=False)  # what Java does on its next write
    assert r.xrange(key, "1000-0", "1000-0") == []  # the pending entry the view warned of


def test_each_rule_says_when_it_reaches_a_groups_floor(r: redis.Redis, mq_config: MQConfig) -> None:
    _one_pending_far_back(r, mq_config, 2_000)  # ids 1000-0 .. 2999-0: one entry a ms
    java = JavaRetention.from_mapping({"maxlen": 2_500, "retention": 10, "frontier_trim": False})
    policy = RetentionPolicy.build(maxlen=1_500, ignore_groups=[PY])
    (part,) = topic_retention(
        r, mq_config.keys, "orders", policy, java, at_ms=3_000, housekeep_interval_s=60
    )
    assert part.rate_per_s == 1_000.0  # the newest 100 entries over their last 100 ms
    rules = {x.rule: x for x in part.rules}
    (length,) = rules["java-maxlen"].threats
    # 2,000 entries from its floor: Java keeps 2,500, so 501 more writes take its floor entry
    assert (length.lost, length.writes_left, length.at_ms) == (0, 501, 3_000 + 501)
    assert rules["java-maxlen"].when == "after 501 more writes"
    assert rules["java-maxlen"].next_at_ms == 3_501
    (aged,) = rules["java-age"].threats
    assert (aged.lost, aged.at_ms) == (0, 1_000 + 10_000)  # its floor entry's time + 10 s
    assert rules["java-age"].next_at_ms == 11_000
    # mqcore's maxlen waits for no opted-out group: 500 of its entries go at the next run
    (ours,) = rules["maxlen"].threats
    assert (ours.lost, ours.at_ms) == (500, 3_000 + 60_000)
    assert rules["maxlen"].at_risk == {PY: 500}
    assert rules["maxlen"].when == "next housekeeper run (every 60 s)"
    assert part.next_loss_at_ms == 3_501


def test_java_trims_a_stopped_groups_backlog_below_the_leased_frontier(
    r: redis.Redis, mq_config: MQConfig, shared: str
) -> None:
    # python-group holds no lease (stopped): Java's frontier trim does not wait for it
    java = JavaRetention.from_mapping({"maxlen": 0, "frontier_trim": True})
    (part,) = topic_retention(r, mq_config.keys, "orders", RetentionPolicy(), java, at_ms=9_000)
    (rule,) = part.rules
    assert (rule.rule, rule.would_delete, rule.exact) == ("java-frontier", 2_000, False)
    assert rule.next_at_ms == 9_000
    (threat,) = rule.threats
    assert (threat.group, threat.leased, threat.at_ms) == (PY, False, 9_000)
    assert threat.lost >= 2_000


def test_cli_lists_each_rules_reach_into_a_backlog(
    r: redis.Redis, mq_config: MQConfig, redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from mqcore.cli import main

    _one_pending_far_back(r, mq_config, 3_000)
    argv = ["--redis-url", redis_url, "retention", "orders", "--java-maxlen", "2500"]
    assert main([*argv, "--housekeep-interval", "60"]) == 0
    text = capsys.readouterr().out
    assert "WRITES_LEFT" in text
    assert "unread entries at risk on partitions [0]" in text


def test_snapshot_and_lag_carry_each_groups_oldest_pending_id(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    # the retention_risk alert's floor, from the XPENDING - + 1 the pass reads anyway
    from mqcore.admin import Admin

    _one_pending_far_back(r, mq_config, 30)
    admin = Admin(mq_config, r)
    (topic,) = builtins(admin.snapshot(last_ids=False))["topics"]
    (group,) = topic["groups"]
    assert group["partitions"][0]["oldest_pending_id"] == "1000-0"
    (snap_topic,) = admin.snapshot().topics
    assert snap_topic.groups[0].partitions[0].oldest_pending_id == "1000-0"
    (live,) = admin.lag("orders", PY)
    assert live.partitions[0].oldest_pending_id == "1000-0"


def test_a_backlog_too_long_to_count_is_a_risk_not_a_capped_count(
    r: redis.Redis, mq_config: MQConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mqcore.retention import counting

    monkeypatch.setattr(counting, "SPLIT_PAGES", 1)  # 1,000 entries a side
    key = _one_pending_far_back(r, mq_config, 3_000)
    r.xack(key, PY, "1000-0")
    r.xgroup_setid(key, PY, "2499-0")  # floor 2500-0: 1,500 below, 1,500 above
    java = JavaRetention.from_mapping({"maxlen": 1_200, "frontier_trim": False})
    (part,) = topic_retention(r, mq_config.keys, "orders", RetentionPolicy(), java)
    (group,) = part.groups
    assert (group.unread, group.unread_exact) == (1_000, False)  # at least
    (threat,) = part.rules[0].threats
    assert (threat.lost, threat.exact, threat.writes_left) == (1, False, 0)  # up to 2,000
    assert part.at_risk
    java = JavaRetention.from_mapping({"maxlen": 2_500, "frontier_trim": False})
    (part,) = topic_retention(r, mq_config.keys, "orders", RetentionPolicy(), java)
    (threat,) = part.rules[0].threats
    assert (threat.lost, threat.writes_left) == (0, 501)  # at most 2,000 from the floor
