"""Payloads live as long as a reference does: an entry, a retry item and a dead letter each
own the out-of-line payload key they name (real redis-server, real Consumer).

Retrying or dead-lettering an out-of-line entry copies its payload to a key the item or
letter owns alone; the retry mover hands the item's key to the new entry; a replay copies
the letter's payload under the target partition's prefix; deleting an item or a letter
unlinks its key. A payload that is gone is never handed to a handler: the message is
dead-lettered with the reason. The retry and dead-letter scripts honour the ack-delete
policy (the entry goes once no other group needs it).
"""

from __future__ import annotations

import json
import threading
from dataclasses import replace

import pytest
import redis

from mqcore.acks import PendingEntry, dead_letter, schedule_retry
from mqcore.config import MQConfig
from mqcore.consumer import Consumer, Outcome
from mqcore.dlq import DeadLetters
from mqcore.models import Message
from mqcore.payloads import PAYLOAD_HASH_REF, PAYLOAD_MISSING, load_payload
from mqcore.producer import Producer
from mqcore.retention import RetentionPolicy, housekeep
from mqcore.retention.trim import trim_topic
from mqcore.retries import RetrySet
from mqcore.retry import RetryMover, RetryPolicy
from mqcore.topics import Topics
from tests.integration.test_consumer import FAST, running, wait_for

pytestmark = pytest.mark.redis

T, G = "orders", "default-group"
BIG = "big-" + "p" * 70_000 + "-end"  # over 64 KB: stored out of line
SLOW = replace(  # retries wait in the retry set (the test moves them back itself)
    FAST, retry_policy=RetryPolicy(max_retries=3, base_ms=600_000, max_ms=600_000, jitter=0.0)
)


def _produce(mq_config: MQConfig, payload: str = BIG) -> str:
    with Producer(mq_config) as producer:
        return producer.send(T, payload, partition=0).id


def _headers(fields: dict[bytes, bytes]) -> dict[str, str]:
    return dict(json.loads(fields[b"headers"]))


def _entry_ref(r: redis.Redis, mq_config: MQConfig, entry_id: str, partition: int = 0) -> str:
    stream = mq_config.keys.partition(T, partition)
    [(_, fields)] = r.xrange(stream, entry_id, entry_id)
    return _headers(fields)[PAYLOAD_HASH_REF]


def _read(r: redis.Redis, mq_config: MQConfig, group: str = G) -> list[str]:
    got = r.xreadgroup(group, "c1", {mq_config.keys.partition(T, 0): ">"}, count=100)
    return [e[0].decode() for e in got[0][1]] if got else []


def _schedule(r: redis.Redis, mq_config: MQConfig, entry_id: str) -> str:
    """Schedule a retry of a pending entry of partition 0, as a failing handler would."""
    [(_, fields)] = r.xrange(mq_config.keys.partition(T, 0), entry_id, entry_id)
    return schedule_retry(
        r,
        mq_config.keys,
        PendingEntry(T, G, 0, entry_id, None),
        due_ms=1,
        fields={k.decode(): v for k, v in fields.items()},
    )


def _trim_everything(r: redis.Redis, mq_config: MQConfig, entry_id: str, ref: str) -> None:
    """The housekeeper (rule consumed) runs, and the entry and its payload key go anyway."""
    housekeep(r, mq_config.keys, RetentionPolicy.build(consumed=True), topics=[T])
    r.xdel(mq_config.keys.partition(T, 0), entry_id)
    r.unlink(ref)


def _consume(mq_config: MQConfig, count: int, topic: str = T) -> list[Message]:
    seen: list[Message] = []
    lock = threading.Lock()

    def handler(m: Message) -> None:
        with lock:
            seen.append(m)

    with running(Consumer(mq_config, topic, handler, FAST)):
        wait_for(lambda: len(seen) >= count)
    return seen


def test_a_retried_message_keeps_its_payload_after_the_entry_and_its_key_are_gone(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    Topics(mq_config).create(T, 1)
    sent = _produce(mq_config)
    ref = _entry_ref(r, mq_config, sent)
    calls: list[str] = []

    def handler(m: Message) -> Outcome:
        calls.append(m.payload)
        return Outcome.RETRY if len(calls) == 1 else Outcome.SUCCESS

    zset = mq_config.keys.retry_zset(T)
    with running(Consumer(mq_config, T, handler, SLOW)):
        wait_for(lambda: r.zcard(zset) == 1)
    _trim_everything(r, mq_config, sent, ref)
    assert r.xlen(mq_config.keys.partition(T, 0)) == 0
    [item] = r.zrange(zset, 0, -1)
    item_ref = json.loads(r.hget(item, "headers"))[PAYLOAD_HASH_REF]
    assert RetryMover(mq_config).move_items(T, [item], force=True).moved == 1
    with running(Consumer(mq_config, T, handler, SLOW)):
        wait_for(lambda: len(calls) == 2)
    assert calls == [BIG, BIG]
    assert item_ref != ref  # the item owned its own copy, handed to the new entry


def test_a_dead_letter_keeps_its_payload_after_the_entry_and_its_key_are_gone(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    Topics(mq_config).create(T, 1)
    sent = _produce(mq_config)
    ref = _entry_ref(r, mq_config, sent)
    dlq = mq_config.keys.dlq(T)
    with running(Consumer(mq_config, T, lambda m: Outcome.FAIL, FAST)):
        wait_for(lambda: r.xlen(dlq) == 1)
    _trim_everything(r, mq_config, sent, ref)
    [(letter_id, letter)] = r.xrange(dlq)
    headers = _headers(letter)
    DeadLetters(mq_config, r).replay(T, letter_id.decode())
    [message] = _consume(mq_config, 1)
    assert message.payload == BIG
    prefix = mq_config.keys.payload_prefix(T, 0)
    assert load_payload(r, headers, prefix=prefix) == BIG  # the letter keeps its own key
    assert headers[PAYLOAD_HASH_REF] != ref


@pytest.mark.parametrize("target", ["other-partition", "other-topic", "grown"])
def test_replay_stores_the_payload_under_the_target_partition(
    r: redis.Redis, mq_config: MQConfig, target: str
) -> None:
    topics = Topics(mq_config)
    topics.create(T, 2 if target == "other-partition" else 1)
    topics.create("audit", 1)
    sent = _produce(mq_config)
    _read(r, mq_config)
    letter_id = dead_letter(r, mq_config.keys, PendingEntry(T, G, 0, sent, None), reason="bad")
    assert letter_id is not None
    if target == "grown":
        topics.grow(T, 4)
    where = {"other-partition": (T, 1), "other-topic": ("audit", 0), "grown": (T, 3)}[target]
    result = DeadLetters(mq_config, r).replay(
        T, letter_id, target_topic=where[0], target_partition=where[1]
    )
    assert result.replayed
    assert result.partition == where[1]
    seen: list[Message] = []
    dlq, letters = mq_config.keys.dlq(where[0]), r.xlen(mq_config.keys.dlq(where[0]))
    with running(Consumer(mq_config, where[0], seen.append, FAST)):
        wait_for(lambda: len(seen) >= 1 or r.xlen(dlq) > letters)
    assert [m.payload for m in seen] == [BIG]
    assert PAYLOAD_MISSING not in seen[0].headers
    [(_, fields)] = r.xrange(mq_config.keys.partition(*where), result.new_id, result.new_id)
    new_ref = _headers(fields)[PAYLOAD_HASH_REF]
    assert new_ref.startswith(mq_config.keys.payload_prefix(*where))
    assert r.sismember(mq_config.keys.payload_index(where[0]), new_ref)


def test_a_missing_payload_is_dead_lettered_never_handed_over(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    Topics(mq_config).create(T, 1)
    sent = _produce(mq_config)
    ref = _entry_ref(r, mq_config, sent)
    r.unlink(ref)
    seen: list[Message] = []
    dlq = mq_config.keys.dlq(T)
    with running(Consumer(mq_config, T, seen.append, FAST)):
        wait_for(lambda: r.xlen(dlq) == 1)
    assert seen == []
    [(_, letter)] = r.xrange(dlq)
    headers = _headers(letter)
    assert headers[PAYLOAD_MISSING] == "true"
    assert headers["x-payload-missing-ref"] == ref
    assert "payload missing" in headers["x-runtime-error-message"]
    assert letter[b"originalMessageId"].decode() == sent
    assert r.xpending(mq_config.keys.partition(T, 0), G)["pending"] == 0


@pytest.mark.parametrize("policy", ["immediate", "all-groups-ack"])
@pytest.mark.parametrize("second_group", [False, True])
def test_retry_and_dead_letter_scripts_honour_the_ack_delete_policy(
    r: redis.Redis, mq_config: MQConfig, policy: str, second_group: bool
) -> None:
    keys = mq_config.keys
    Topics(mq_config).create(T, 1, groups=(G, "audit") if second_group else (G,))
    ids = [_produce(mq_config) for _ in range(3)]
    refs = [_entry_ref(r, mq_config, i) for i in ids]
    assert _read(r, mq_config) == ids
    [(_, fields)] = r.xrange(keys.partition(T, 0), ids[0], ids[0])
    item = schedule_retry(
        r,
        keys,
        PendingEntry(T, G, 0, ids[0], None),
        policy=policy,
        fields={k.decode(): v for k, v in fields.items()},
        due_ms=2**40,
    )
    letter = dead_letter(r, keys, PendingEntry(T, G, 0, ids[1], None), policy=policy, reason="bad")
    [(_, fields)] = r.xrange(keys.partition(T, 0), ids[2], ids[2])
    new_id = schedule_retry(
        r,
        keys,
        PendingEntry(T, G, 0, ids[2], None),
        policy=policy,
        fields={k.decode(): v for k, v in fields.items()},
        due_ms=0,
        direct=True,
    )
    stream = keys.partition(T, 0)
    left = [e[0].decode() for e in r.xrange(stream)]
    if second_group:  # "audit" has read nothing: every entry stays, with its payload key
        assert left == [*ids, new_id]
        assert all(r.exists(ref) for ref in refs)
    else:
        assert left == [new_id]
        assert not any(r.exists(ref) for ref in refs)
        assert not any(r.sismember(keys.payload_index(T), ref) for ref in refs)
    item_ref = json.loads(r.hget(keys.retry_item(T, item), "headers"))[PAYLOAD_HASH_REF]
    [(_, dead)] = r.xrange(keys.dlq(T), letter, letter)
    direct_ref = _entry_ref(r, mq_config, new_id)
    prefix = keys.payload_prefix(T, 0)
    for owned in (item_ref, _headers(dead)[PAYLOAD_HASH_REF], direct_ref):
        assert owned not in refs
        assert load_payload(r, {PAYLOAD_HASH_REF: owned}, prefix=prefix) == BIG


def test_deleting_items_and_letters_unlinks_the_keys_they_own(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    keys = mq_config.keys
    topics = Topics(mq_config)
    topics.create(T, 1)
    ids = [_produce(mq_config) for _ in range(6)]
    _read(r, mq_config)
    items = []
    for entry_id in ids[:2]:
        [(_, fields)] = r.xrange(keys.partition(T, 0), entry_id, entry_id)
        raw = {k.decode(): v for k, v in fields.items()}
        pending = PendingEntry(T, G, 0, entry_id, None)
        items.append(schedule_retry(r, keys, pending, fields=raw, due_ms=1))
    letters = [dead_letter(r, keys, PendingEntry(T, G, 0, i, None), reason="x") for i in ids[2:]]
    owned = set(r.smembers(keys.payload_index(T))) - {
        _entry_ref(r, mq_config, i).encode() for i in ids
    }
    assert len(owned) == 6  # two retry items and four letters, each with its own key

    def left() -> set[bytes]:
        return {k for k in owned if r.exists(k)} | (owned & r.smembers(keys.payload_index(T)))

    assert RetrySet(mq_config, r).delete(T, [items[0]]).deleted == 1
    assert len(left()) == 5
    # the mover hands the other item's key to the new entry: nothing copied, nothing lost
    [moving] = r.zrange(keys.retry_zset(T), 0, -1)
    moving_ref = json.loads(r.hget(moving, "headers"))[PAYLOAD_HASH_REF]
    RetryMover(mq_config).move_items(T, [moving], force=True)
    newest = r.xrevrange(keys.partition(T, 0), count=1)[0][1]
    assert _headers(newest)[PAYLOAD_HASH_REF] == moving_ref
    assert len(left()) == 5
    dlq = DeadLetters(mq_config, r)
    assert dlq.delete(T, letters[0])
    assert len(left()) == 4
    assert trim_topic(topics, T, maxlen=2, dlq=True) == 1
    assert len(left()) == 3
    assert dlq.purge(T) == 2
    assert left() == {moving_ref.encode()}  # only the moved entry's key is still owned


def test_payload_keys_have_no_ttl_by_default_and_an_explicit_one_is_kept(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    Topics(mq_config).create(T, 1)
    assert r.pttl(_entry_ref(r, mq_config, _produce(mq_config))) == -1  # as Java: never
    timed = replace(mq_config, payload_ttl_ms=60_000)
    assert 0 < r.pttl(_entry_ref(r, mq_config, _produce(timed))) <= 60_000


def test_a_java_kryo_letter_owns_its_copy_and_replays_it(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    from mqcore.codec import kryo

    cfg = replace(mq_config, encoding="java-kryo")
    keys = cfg.keys
    Topics(cfg).create(T, 1)
    sent = _produce(cfg)
    ref = _entry_ref(r, cfg, sent)
    _read(r, cfg)
    letter = dead_letter(
        r, keys, PendingEntry(T, G, 0, sent, None), reason="x", encoding="java-kryo"
    )
    assert letter is not None
    [(_, raw)] = r.xrange(keys.dlq(T), letter, letter)
    headers = {kryo.decode(k): kryo.decode(v) for k, v in raw.items()}["headers"]
    owned = headers[PAYLOAD_HASH_REF]
    assert owned != ref
    r.unlink(ref)
    dlq = DeadLetters(cfg, r)
    new_id = dlq.replay(T, letter).new_id
    assert new_id is not None
    copied = _entry_ref(r, cfg, new_id)
    assert load_payload(r, {PAYLOAD_HASH_REF: copied}, prefix=keys.payload_prefix(T, 0)) == BIG
    assert dlq.delete(T, letter)
    # on java-kryo a Java service's letters share the entry's key: deleting unlinks none
    assert r.exists(owned)
    assert r.exists(copied)  # the replayed entry's own key


def test_an_item_moved_to_another_partition_takes_its_key_under_that_partitions_prefix(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    keys = mq_config.keys
    Topics(mq_config).create(T, 2)
    sent = _produce(mq_config)
    _read(r, mq_config)
    item_id = _schedule(r, mq_config, sent)
    item = keys.retry_item(T, item_id)
    owned = json.loads(r.hget(item, "headers"))[PAYLOAD_HASH_REF]
    r.hset(item, "partitionId", "7")  # folded onto partition 1 of 2
    assert RetryMover(mq_config).move_items(T, [item], force=True).moved == 1
    [(_, entry)] = r.xrange(keys.partition(T, 1))
    moved = _headers(entry)[PAYLOAD_HASH_REF]
    assert moved.startswith(keys.payload_prefix(T, 1))
    assert not r.exists(owned)
    assert r.sismember(keys.payload_index(T), moved)
    assert not r.sismember(keys.payload_index(T), owned)
    assert load_payload(r, _headers(entry), prefix=keys.payload_prefix(T, 1)) == BIG


def test_a_retry_of_an_entry_whose_key_is_gone_says_so_and_copies_nothing(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    keys = mq_config.keys
    Topics(mq_config).create(T, 1)
    sent = _produce(mq_config)
    ref = _entry_ref(r, mq_config, sent)
    _read(r, mq_config)
    r.unlink(ref)
    r.srem(keys.payload_index(T), ref)
    item_id = _schedule(r, mq_config, sent)
    headers = json.loads(r.hget(keys.retry_item(T, item_id), "headers"))
    assert headers[PAYLOAD_MISSING] == "true"
    assert headers["x-payload-missing-ref"] == ref
    assert r.scard(keys.payload_index(T)) == 0


def test_an_item_the_mover_drops_takes_its_payload_key(r: redis.Redis, mq_config: MQConfig) -> None:
    keys = mq_config.keys
    Topics(mq_config).create(T, 1)
    sent = _produce(mq_config)
    _read(r, mq_config)
    item_id = _schedule(r, mq_config, sent)
    item = keys.retry_item(T, item_id)
    owned = json.loads(r.hget(item, "headers"))[PAYLOAD_HASH_REF]
    r.hset(item, "topic", "")  # no topic: dropped, as Java's mover drops it
    assert RetryMover(mq_config).move_items(T, [item], force=True).dropped == 1
    assert not r.exists(owned)
    assert not r.sismember(keys.payload_index(T), owned)


def test_on_java_kryo_the_deleted_entrys_payload_key_stays(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    cfg = replace(mq_config, encoding="java-kryo")
    Topics(cfg).create(T, 1)
    sent = _produce(cfg)
    ref = _entry_ref(r, cfg, sent)
    _read(r, cfg)
    letter = dead_letter(
        r,
        cfg.keys,
        PendingEntry(T, G, 0, sent, None),
        reason="x",
        encoding="java-kryo",
        policy="immediate",
    )
    assert letter is not None
    assert r.xlen(cfg.keys.partition(T, 0)) == 0  # the entry goes under the policy
    assert r.exists(ref)  # its key stays: a Java service's retries may share it
