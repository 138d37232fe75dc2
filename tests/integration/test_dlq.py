"""DeadLetters against a real Redis: browse/filter/get, idempotent replay, delete, purge."""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import redis

from mqcore.boundary import redis_errors
from mqcore.config import MQConfig
from mqcore.dlq import DeadLetters
from mqcore.dlq.replay import Replayer
from mqcore.errors import (
    InvalidIdError,
    MQError,
    UnknownMessageError,
    UnknownPartitionError,
    UnknownTopicError,
)
from mqcore.models import ReplayResult
from mqcore.partition import partition_for_key
from tests.integration.raw_java import create_topic, java_dlq_letter

pytestmark = pytest.mark.redis


@pytest.fixture
def letters(r: redis.Redis, mq_config: MQConfig) -> list[str]:
    keys = mq_config.keys
    create_topic(r, keys, "orders", 4, groups=("g",))
    ids = []
    for i in range(12):
        ids.append(
            java_dlq_letter(
                r, keys, "orders", i % 4, f"payload-{i}", key=f"k{i % 3}",
                extra_headers={"x-runtime-error-message": "boom" if i % 2 else "bad <script>"},
                original_id=f"{100 + i}-0",
            )
        )  # fmt: skip
    return ids


def test_page_newest_first_with_cursor(
    r: redis.Redis, mq_config: MQConfig, letters: list[str]
) -> None:
    dlq = DeadLetters(mq_config, r)
    first = dlq.page("orders", limit=5)
    assert [x.id for x in first.letters] == letters[::-1][:5]
    assert first.next_cursor == letters[-5]
    second = dlq.page("orders", limit=5, before=first.next_cursor)
    assert [x.id for x in second.letters] == letters[::-1][5:10]
    last = dlq.page("orders", limit=5, before=second.next_cursor)
    assert len(last.letters) == 2
    assert last.next_cursor is None
    letter = first.letters[0]
    assert (letter.partition, letter.key, letter.payload) == (3, "k2", "payload-11")
    assert letter.original_id == "111-0"
    assert letter.retry_count == 3


def test_filters(r: redis.Redis, mq_config: MQConfig, letters: list[str]) -> None:
    dlq = DeadLetters(mq_config, r)
    by_p = dlq.page("orders", partition=1)
    assert {x.partition for x in by_p.letters} == {1}
    assert len(by_p.letters) == 3
    by_key = dlq.page("orders", key="k0")
    assert {x.key for x in by_key.letters} == {"k0"}
    assert len(by_key.letters) == 4
    by_text = dlq.page("orders", text="SCRIPT")
    assert len(by_text.letters) == 6
    assert dlq.page("orders", text="payload-7").letters[0].id == letters[7]
    cut = int(letters[5].split("-")[0])
    newer = dlq.page("orders", since_ms=cut + 1, limit=50)
    assert all(int(x.id.split("-")[0]) > cut for x in newer.letters)
    bounded = dlq.page("orders", key="nope", max_scan=5)
    assert not bounded.complete
    assert bounded.scanned == 5
    assert bounded.next_cursor == letters[-5]
    assert dlq.ids_matching("orders", partition=2) == [letters[2], letters[6], letters[10]]
    assert dlq.ids_matching("orders") == letters


def test_replay_routes_by_header_partition_not_the_java_top_level_zero(
    r: redis.Redis, mq_config: MQConfig, letters: list[str]
) -> None:
    keys = mq_config.keys
    dlq = DeadLetters(mq_config, r)
    res = dlq.replay("orders", letters[3], by="alice")
    assert res.replayed
    assert (res.reason, res.partition, res.topic) == ("replayed", 3, "orders")
    ((entry_id, fields),) = r.xrange(keys.partition("orders", 3))
    assert entry_id.decode() == res.new_id
    assert fields[b"payload"] == b"payload-3"
    assert fields[b"retryCount"] == b"0"
    assert fields[b"partitionId"] == b"3"
    assert fields[b"key"] == b"k0"
    headers = json.loads(fields[b"headers"])
    assert headers["x-replayed-from-dlq"] == letters[3]
    assert headers["x-original-message-id"] == "103-0"
    again = dlq.replay("orders", letters[3])
    assert (again.replayed, again.reason, again.new_id) == (False, "already-replayed", res.new_id)
    forced = dlq.replay("orders", letters[3], force=True, by="bob")
    assert (forced.replayed, forced.reason) == (True, "forced")
    got = dlq.get("orders", letters[3])
    assert [(x.by, x.forced) for x in got.replays] == [("alice", False), ("bob", True)]
    assert r.xlen(keys.dlq("orders")) == 12  # the letter is kept, as Java does


def test_replay_many_plan_and_targets(
    r: redis.Redis, mq_config: MQConfig, letters: list[str]
) -> None:
    keys = mq_config.keys
    dlq = DeadLetters(mq_config, r)
    plan = dlq.plan("orders", letters[:4])
    assert [p.partition for p in plan] == [0, 1, 2, 3]
    assert {p.reason for p in plan} == {"would-replay"}
    assert sum(r.xlen(keys.partition("orders", p)) for p in range(4)) == 0
    results = dlq.replay_many("orders", [*letters[:4], "1-1"])
    assert [x.reason for x in results] == ["replayed"] * 4 + ["missing"]
    assert [x.reason for x in dlq.plan("orders", letters[:2])] == ["already-replayed"] * 2
    pinned = dlq.replay("orders", letters[5], target_partition=0)
    assert pinned.partition == 0
    create_topic(r, keys, "other", 2, groups=())
    moved = dlq.replay("orders", letters[6], target_topic="other")
    # letter 6 came from partition 2, which "other" does not have: routed by its key
    assert (moved.topic, moved.partition) == ("other", partition_for_key("k0", 2))
    assert r.xlen(keys.partition("other", partition_for_key("k0", 2))) == 1
    with pytest.raises(UnknownPartitionError):
        dlq.replay("orders", letters[7], target_partition=9)
    with pytest.raises(UnknownTopicError):
        dlq.replay("orders", letters[7], target_topic="ghost")


def test_twenty_concurrent_replays_make_exactly_one_message(
    r: redis.Redis, mq_config: MQConfig, letters: list[str]
) -> None:
    keys = mq_config.keys
    barrier = threading.Barrier(20)

    def click(_: int) -> bool:
        client = mq_config.client()
        try:
            dlq = DeadLetters(mq_config, client)
            barrier.wait(timeout=10)
            return dlq.replay("orders", letters[0], by="click").replayed
        finally:
            client.close()

    with ThreadPoolExecutor(20) as pool:
        outcomes = list(pool.map(click, range(20)))
    assert outcomes.count(True) == 1
    assert r.xlen(keys.partition("orders", 0)) == 1
    assert len(DeadLetters(mq_config, r).replays("orders", letters[0])) == 1


def test_followups_see_consumption_and_failing_again(
    r: redis.Redis, mq_config: MQConfig, letters: list[str]
) -> None:
    keys = mq_config.keys
    dlq = DeadLetters(mq_config, r)
    res = dlq.replay("orders", letters[1])
    [before] = dlq.followups("orders", letters[1])
    assert before["exists"]
    assert not before["consumed"]
    assert before["failed_again"] == []
    r.xreadgroup("g", "c", {keys.partition("orders", 1): ">"})
    r.xack(keys.partition("orders", 1), "g", res.new_id)
    time.sleep(0.002)
    again = java_dlq_letter(
        r, keys, "orders", 1, "payload-1", extra_headers={"x-replayed-from-dlq": letters[1]}
    )
    [after] = dlq.followups("orders", letters[1])
    assert after["consumed"]
    assert after["failed_again"] == [again]


def test_followups_match_each_failure_to_its_own_replay(
    r: redis.Redis, mq_config: MQConfig, letters: list[str]
) -> None:
    """A letter replayed twice: only the second replay failed again, through a retry."""
    from mqcore.acks import PendingEntry, dead_letter, schedule_retry

    keys = mq_config.keys
    dlq = DeadLetters(mq_config, r)
    stream = keys.partition("orders", 1)
    first = dlq.replay("orders", letters[1])
    second = dlq.replay("orders", letters[1], force=True)
    r.xreadgroup("g", "c", {stream: ">"})
    r.xack(stream, "g", first.new_id)
    # the second replay is retried directly (a new entry id), then dead-lettered
    raw = r.xrange(stream, second.new_id, second.new_id)[0][1]
    fields = {k.decode(): v for k, v in raw.items()}
    retried = schedule_retry(
        r,
        keys,
        PendingEntry("orders", "g", 1, second.new_id, None),
        fields=fields,
        due_ms=0,
        direct=True,
    )
    r.xreadgroup("g", "c", {stream: ">"})
    again = dead_letter(r, keys, PendingEntry("orders", "g", 1, retried, None), reason="boom")
    one, two = dlq.followups("orders", letters[1])
    assert (one["seq"], one["new_id"], one["failed_again"]) == (1, first.new_id, [])
    assert one["consumed"]
    assert (two["seq"], two["new_id"], two["failed_again"]) == (2, second.new_id, [again])
    assert two["forced"]


def test_get_delete_purge_and_bad_input(
    r: redis.Redis, mq_config: MQConfig, letters: list[str]
) -> None:
    dlq = DeadLetters(mq_config, r)
    assert dlq.depth("orders") == 12
    with pytest.raises(InvalidIdError):
        dlq.get("orders", "not-an-id")
    with pytest.raises(InvalidIdError):
        dlq.replay_many("orders", [letters[0], "x"])
    assert dlq.replays("orders", letters[0]) == []
    with pytest.raises(UnknownMessageError):
        dlq.get("orders", "1-0")
    with pytest.raises(UnknownMessageError):
        dlq.replay("orders", "1-0")
    with pytest.raises(UnknownTopicError):
        dlq.page("ghost")
    assert dlq.delete("orders", letters[0])
    assert not dlq.delete("orders", letters[0])
    assert dlq.purge("orders") == 11
    assert dlq.depth("orders") == 0


def test_replay_on_the_wire_answers_as_through_redis_pys_script(
    r: redis.Redis, redis_url: str, mq_config: MQConfig, letters: list[str]
) -> None:
    """A replay's script call goes out on the wire (its own link for a plain client, the
    client's connection for a single-connection one) and, without a wire (a client the wire
    does not serve), through redis-py's Script: the same results, the same errors."""
    single = redis.Redis.from_url(redis_url, single_connection_client=True)
    keys = mq_config.keys

    def scripted(ids: list[str]) -> list[ReplayResult]:  # no wire: redis-py's Script
        with redis_errors("script replay_letters"):  # what DeadLetters adds around it
            replay = Replayer(r, keys).run
            return replay(
                "orders", ids, "orders", by="", force=False, target_partition=None, dry=False
            )

    try:
        wired = [DeadLetters(mq_config, r).replay_many, DeadLetters(mq_config, single).replay_many]
        calls = [lambda ids: wired[0]("orders", ids), lambda ids: wired[1]("orders", ids), scripted]
        done = [call(letters[2 * i : 2 * i + 2]) for i, call in enumerate(calls)]
        assert [x.reason for part in done for x in part] == ["replayed"] * 6
        assert [x.partition for part in done for x in part] == [0, 1, 2, 3, 0, 1]
        again = [call(letters[4 - 2 * i : 6 - 2 * i]) for i, call in enumerate(calls)]
        assert [x.reason for part in again for x in part] == ["already-replayed"] * 6
        r.delete(keys.dlq_replays("orders"))
        r.set(keys.dlq_replays("orders"), "not a hash")  # the script's HGET fails
        errors = []
        for call in calls:
            with pytest.raises(MQError) as caught:
                call([letters[7]])
            errors.append((type(caught.value), str(caught.value)))
        assert errors[0] == errors[1] == errors[2]
    finally:
        single.close()


def test_replay_reloads_its_script_after_a_flush(
    r: redis.Redis, mq_config: MQConfig, letters: list[str]
) -> None:
    dlq = DeadLetters(mq_config, r)
    assert dlq.replay("orders", letters[0], by="op").replayed
    r.script_flush()  # a restarted or flushed server forgets loaded scripts
    second = dlq.replay("orders", letters[1], by="op")
    assert (second.replayed, second.partition) == (True, 1)
    assert dlq.replay("orders", letters[1]).reason == "already-replayed"
