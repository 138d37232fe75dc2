"""Drill 12: a partition added by a Java service (the topic grew): shown, no false alarm.

A Java service configured with three partitions writes to a two-partition topic: it raises
the partition count in the topic's meta hash, adds the stream to the partitions set with
the group at ``0`` (MKSTREAM) and writes its entries there, with raw commands in Java's
layout. The next pass shows the third partition, the running mqcore consumer takes it and
drains it, and the group stays OK: no status change, no alert.
"""

from __future__ import annotations

import json

import pytest

from mqcore.topics import Topics
from tests.drills.harness import Drill
from tests.integration.raw_java import partition_fields

pytestmark = [pytest.mark.redis, pytest.mark.drills, pytest.mark.django_db]


def test_partition_added_by_java_is_shown_without_alarm(drill: Drill) -> None:
    Topics(drill.config).create("orders", 2)
    drill.producer("orders", rate=10)
    drill.consumer("orders")
    drill.warm_up(3)
    assert drill.partition_statuses("orders", "default-group") == {0: "OK", 1: "OK"}

    keys, client = drill.config.keys, drill.config.client()
    try:  # what Java's admin does for a partition count of 3, then its producer's entries
        client.hset(keys.meta("orders"), mapping={"partitionCount": 3})
        client.sadd(keys.partitions_set("orders"), keys.partition("orders", 2))
        client.xgroup_create(keys.partition("orders", 2), "default-group", id="0", mkstream=True)
        for seq in range(30):
            body = json.dumps({"producer": "java", "seq": seq})
            client.xadd(keys.partition("orders", 2), partition_fields("orders", 2, body))
    finally:
        client.close()
    drill.inject()
    passes = drill.until(
        "partition 2 shown",
        lambda: 2 in drill.partition_statuses("orders", "default-group"),
        max_passes=3,
    )
    assert passes == 1
    drill.detected("12 partition added (Java)", "new partition shown, no alert", passes)
    drill.until(
        "partition 2 drained",
        lambda: drill.gauge("lag", "orders", 2) == 0,
        max_passes=8,
    )
    for _ in range(2):
        drill.collect()
    handled = drill.config.client()
    try:  # every Java entry handled, none dead-lettered
        records = [json.loads(r) for r in handled.lrange("drill:sink:orders", 0, -1)]
    finally:
        handled.close()
    assert sum(r["producer"] == "java" for r in records) == 30
    assert drill.metric("redis_streaming_mq_console_dlq_depth", topic="orders") == 0
    assert set(drill.seen("orders")) == {"OK"}
    assert drill.partition_statuses("orders", "default-group") == {0: "OK", 1: "OK", 2: "OK"}
    assert not drill.timeline(topic="orders", kind="status")
    drill.assert_only_alerts()
