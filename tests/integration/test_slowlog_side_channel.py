"""Side channels of the collectors page: the slow log shows command and key names, never
arguments, and nothing on the page or its API names a topic the viewer may not see.

Before, ``SLOWLOG GET`` rows reached every viewer of the cluster with their arguments
(``XADD stream:topic:payments:p:0 ... payload {"card":"4111..."}``), and the Java probe's
topic lists and a restart's missing groups named every topic. Real redis-server; the
slow log is forced on (``slowlog-log-slower-than 0``) for the commands of each test only.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import redis
from django.test import Client

from dashboard.models import SensitiveTopic
from mqcore.admin.probes import command_keys, redis_health, slowlog_entries
from mqcore.cli import main
from mqcore.config import MQConfig
from mqcore.keys import KeySpace
from tests.integration.dlq_support import make_topic, role_user, scoped_viewer
from tests.integration.test_java_kryo_letters import _b

pytestmark = [pytest.mark.redis, pytest.mark.django_db]

CARD = "4111 1111 1111 1111"
SCRIPT = "redis.call('SET', KEYS[1] .. ':x', ARGV[1]) return 1"


@pytest.fixture
def slow_commands(r: redis.Redis, mq_config: MQConfig) -> Iterator[None]:
    """Slow-log every command while the test's own run (the threshold is put back)."""
    before = r.config_get("slowlog-log-slower-than")["slowlog-log-slower-than"]
    keys = mq_config.keys
    r.slowlog_reset()
    r.config_set("slowlog-log-slower-than", 0)
    try:
        r.xadd(keys.partition("payments", 0), {"payload": json.dumps({"card": CARD})})
        r.xadd(keys.partition("orders-eu", 0), {"payload": json.dumps({"card": CARD})})
        r.eval(SCRIPT, 2, keys.partition("orders-eu", 0), keys.dlq("payments"), CARD)
        r.set("app:session:alice", CARD)
        r.set("stream:topic:orders-eu:p:" + "9" * 200, CARD)  # a key Redis cuts short
    finally:
        r.config_set("slowlog-log-slower-than", before)
    yield
    r.slowlog_reset()


def test_mqcore_reads_command_and_key_names_only(r: redis.Redis, slow_commands: None) -> None:
    slow = redis_health(r)["slowlog"]
    assert CARD not in json.dumps(slow)
    rows = [(e["command"], e["keys"], e["cut_keys"]) for e in reversed(slow)]
    assert ("XADD", ["stream:topic:payments:p:0"], 0) in rows
    assert ("EVAL", ["stream:topic:orders-eu:p:0", "stream:topic:payments:dlq"], 0) in rows
    assert ("SET", ["app:session:alice"], 0) in rows
    assert ("SET", [], 1) in rows  # named by no one: Redis kept only its first 128 bytes
    assert all(set(e) == {"id", "at_s", "duration_us", "command", "keys", "cut_keys"} for e in slow)


def test_the_cli_prints_no_argument(
    capsys: pytest.CaptureFixture[str], redis_url: str, slow_commands: None
) -> None:
    for args in (["health"], ["--json", "health"]):
        main(["--redis-url", redis_url, *args])
        out = capsys.readouterr().out
        assert CARD not in out
        assert "stream:topic:payments:p:0" in out


def test_key_positions_without_asking_redis() -> None:
    assert command_keys(["xreadgroup", "GROUP", "g", "c", "COUNT", "5", "STREAMS", "a", "b",
                         ">", ">"]) == ("XREADGROUP", ["a", "b"])  # fmt: skip
    assert command_keys(["EVALSHA", "f" * 40, "1", "k", "secret"]) == ("EVALSHA", ["k"])
    assert command_keys(["FCALL", "fn", "0", "secret"]) == ("FCALL", [])
    assert command_keys(["EVALSHA", "f" * 40, "x", "k"]) == ("EVALSHA", [])
    assert command_keys(["XINFO", "GROUPS", "k"]) == ("XINFO GROUPS", ["k"])
    assert command_keys(["CONFIG", "SET", "requirepass", "secret"]) == ("CONFIG SET", [])
    assert command_keys(["ACL", "SETUSER", "u", ">secret"]) == ("ACL SETUSER", [])
    assert command_keys(["MSET", "k", "secret"]) == ("MSET", [])  # unknown layout: no keys
    assert command_keys(["DEL", "a", "b", "... (3 more arguments)"]) == ("DEL", ["a", "b"])
    assert command_keys(['{"card": 1}', "x"]) == ("?", [])
    raw = [[7, 1700000000, 12, [b"XADD", b"k", b"*", b"payload", CARD.encode()], b"", b""]]
    assert slowlog_entries(raw) == [
        {"id": 7, "at_s": 1700000000, "duration_us": 12, "command": "XADD", "keys": ["k"],
         "cut_keys": 0},
    ]  # fmt: skip


@pytest.mark.parametrize("hash_tags", [False, True])
def test_every_topic_key_reads_back_to_its_topic(hash_tags: bool) -> None:
    ks = KeySpace(hash_tags=hash_tags)
    t = "orders-eu.v2"
    made = [
        ks.partition(t, 3), ks.dlq(t), ks.meta(t), ks.partitions_set(t), ks.lease(t, "g", 1),
        ks.lease_epoch(t, "g", 1), ks.lease_released(t, "g", 1), ks.retry_zset(t),
        ks.retry_item(t, "ab12"), ks.retry_lock(t), ks.commit_frontier(t, 0),
        ks.payload(t, 2, "uuid"), ks.payload_index(t), ks.consumers(t, "g"),
        ks.dlq_replays(t),
    ]  # fmt: skip
    assert [ks.topic_of(k) for k in made] == [t] * len(made)
    assert ks.topic_of(ks.retry_zset("item")) == "item"  # a topic named like a key part
    assert ks.topic_of(ks.retry_zset("lock")) == "lock"
    for other in (
        ks.registry(), ks.pipelines(), ks.checkpoint_meta("p"), ks.sink_output("p", "s"),
        "app:session:alice", "stream:topic:bad name:p:0", "stream:topic:x:p",
        "stream:topic:" + "9" * 100, "streaming:mq:retry:item:x",
    ):  # fmt: skip
        assert ks.topic_of(other) is None, other


def _collect(r: redis.Redis, mq_config: MQConfig) -> None:
    """One collector pass with a Java frontier on both topics, then a restart that lost a
    group of each (as the pass reports one)."""
    from dashboard.clusters import console_keys, console_redis
    from dashboard.collectors.passes import collect_cluster
    from dashboard.store import ConsoleStore

    for topic in ("orders-eu", "payments"):
        r.hset(mq_config.keys.commit_frontier(topic, 0), _b("field:payload"), _b("str:id"))
    store = ConsoleStore(console_redis(), console_keys())
    collect_cluster("default", claim=False, store=store)
    health = store.collector_health_get()["default"]
    assert health["java"]["frontier"] == ["orders-eu", "payments"]
    lost = ["orders-eu/billing", "payments/ledger"]
    store.health_write("default", {**health, "redis_restart": {"at_ms": 1, "missing_groups": lost}})


def test_a_scoped_viewer_sees_no_argument_and_no_other_topic(
    r: redis.Redis, mq_config: MQConfig, console_r: redis.Redis, slow_commands: None
) -> None:
    make_topic(mq_config, "orders-eu", 1)
    make_topic(mq_config, "payments", 1)
    _collect(r, mq_config)
    client = scoped_viewer("sally", "orders-*")
    page = client.get("/collectors/").content.decode()
    api = client.get("/api/v1/collectors").json()
    for text in (page, json.dumps(api)):
        assert CARD not in text
        assert "payments" not in text  # no key, frontier list or lost group names it
        assert "app:session" not in text
        assert "stream:topic:orders-eu:p:0" in text
        assert "orders-eu/billing" in text
    row = api["collectors"][0]
    assert row["java"]["frontier"] == ["orders-eu"]
    assert row["restart"]["missing_groups"] == ["orders-eu/billing"]
    assert row["restart"]["hidden_groups"] == 1
    slow = {(e["command"], tuple(e["keys"]), e["hidden_keys"]) for e in row["redis"]["slowlog"]}
    assert ("XADD", (), 1) in slow  # payments' partition
    assert ("EVAL", ("stream:topic:orders-eu:p:0",), 1) in slow
    assert ("SET", (), 1) in slow  # a key of no topic, and the one cut short
    assert "+1 key hidden" in page
    assert "1 of topics you cannot see" in page


def test_a_masked_viewer_sees_key_names_but_no_argument(
    r: redis.Redis, mq_config: MQConfig, console_r: redis.Redis, slow_commands: None
) -> None:
    make_topic(mq_config, "orders-eu", 1)
    make_topic(mq_config, "payments", 1)
    SensitiveTopic.objects.create(cluster="default", pattern="payments")
    _collect(r, mq_config)
    client = Client()
    client.force_login(role_user("vic", "Viewer"))
    page = client.get("/collectors/").content.decode()
    api = json.dumps(client.get("/api/v1/collectors").json())
    for text in (page, api):
        assert CARD not in text
        assert "stream:topic:payments:p:0" in text
        assert "payments/ledger" in text
        assert "app:session" not in text  # a key of no topic: counted, never named
