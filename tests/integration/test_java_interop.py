"""Entries written the way Java writes them are read, lagged, moved and replayed correctly."""

from __future__ import annotations

import json

import pytest
import redis

from mqcore.admin import Admin
from mqcore.config import MQConfig
from mqcore.dlq import DeadLetters
from mqcore.partition import partition_for_key
from tests.integration.raw_java import add_messages, create_topic, java_dlq_letter

pytestmark = pytest.mark.redis

KEYS = ["k", "k0", "k1", "k2", "k3", "order-42", "café", "中文键", "emoji-😀", "", "x" * 300]


def test_replay_routing_by_key_matches_the_java_partitioner(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    keys = mq_config.keys
    create_topic(r, keys, "t", 5, groups=())
    dlq = DeadLetters(mq_config, r)
    for key in KEYS:
        # partition 7 does not exist any more: the letter is routed by its key
        letter = java_dlq_letter(r, keys, "t", 7, "p", key=key or None)
        res = dlq.replay("t", letter)
        expected = partition_for_key(key, 5) if key else 0
        assert res.partition == expected, key


def test_java_dlq_bug_top_level_zero_is_not_trusted(r: redis.Redis, mq_config: MQConfig) -> None:
    keys = mq_config.keys
    create_topic(r, keys, "t", 4, groups=())
    java = java_dlq_letter(r, keys, "t", 3, "payload")
    assert r.xrange(keys.dlq("t"))[0][1][b"partitionId"] == b"0"  # what Java writes
    no_header = r.xadd(keys.dlq("t"), {"originalTopic": "t", "payload": "x", "partitionId": 2,
                                       "headers": "{}", "retryCount": 1})  # fmt: skip
    dlq = DeadLetters(mq_config, r)
    page = dlq.page("t")
    assert [x.partition for x in page.letters] == [2, 3]
    assert dlq.replay("t", java).partition == 3
    assert dlq.replay("t", no_header.decode()).partition == 2


def test_java_entries_are_read_and_lagged(r: redis.Redis, mq_config: MQConfig) -> None:
    keys = mq_config.keys
    create_topic(r, keys, "orders", 2)
    ids = add_messages(r, keys, "orders", 1, 3)
    admin = Admin(mq_config, r)
    msg = admin.message("orders", 1, ids[1])
    assert (msg.payload, msg.retry_count, msg.max_retries) == ("m1", 0, 3)
    assert msg.fields["topic"] == "orders"
    [group] = admin.lag("orders")
    assert (group.group, group.lag) == ("default-group", 3)


def test_operator_move_to_dlq_writes_what_java_reads(r: redis.Redis, mq_config: MQConfig) -> None:
    keys = mq_config.keys
    create_topic(r, keys, "orders", 2, groups=("g",))
    ids = add_messages(r, keys, "orders", 1, 3)
    r.xreadgroup("g", "c1", {keys.partition("orders", 1): ">"})
    admin = Admin(mq_config, r)
    moved = admin.move_to_dlq("orders", "g", 1, [ids[0], ids[2], "1-1"], reason="poison")
    assert moved == [ids[0], ids[2]]
    assert admin.pending("orders", "g").total == 1
    (dlq_id, fields), *_ = r.xrange(keys.dlq("orders"))
    assert fields[b"partitionId"] == b"1"  # mqcore writes the real partition at the top level
    assert json.loads(fields[b"headers"])["partitionId"] == "1"
    assert fields[b"originalMessageId"].decode() == ids[0]
    letter = DeadLetters(mq_config, r).get("orders", dlq_id.decode())
    assert (letter.partition, letter.payload) == (1, "m0")
