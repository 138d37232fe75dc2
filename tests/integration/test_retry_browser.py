"""The retry browser in mqcore on a real redis-server: list, filter, page, retry now, delete."""

from __future__ import annotations

import json

import pytest
import redis

from mqcore.codec import kryo
from mqcore.config import MQConfig
from mqcore.errors import InvalidArgumentError, UnknownMessageError, UnknownTopicError
from mqcore.retries import RetryFilter, RetrySet
from mqcore.topics import Topics
from tests.integration.retry_items import schedule

pytestmark = pytest.mark.redis

NOW = 1_700_000_000_000


@pytest.fixture
def rs(mq_config: MQConfig) -> RetrySet:
    Topics(mq_config).create("orders", 2)
    return RetrySet(mq_config)


def _id(member: str) -> str:
    return member.rsplit(":", 1)[1]


def _fill(r: redis.Redis, ks, n: int, *, past: int = 0) -> list[str]:  # type: ignore[no-untyped-def]
    """n items, the first ``past`` due before NOW, one ms apart; returns ids in due order."""
    out = []
    for i in range(n):
        due = NOW - (past - i) * 1000 if i < past else NOW + (i - past + 1) * 1000
        member = schedule(
            r, ks, "orders", i % 2, f"payload {i}", due_ms=due, key=f"k{i % 3}", retry_count=i
        )
        out.append(_id(member))
    return out


def _all_pages(rs: RetrySet, flt: RetryFilter, limit: int) -> list[str]:
    seen: list[str] = []
    cursor = None
    for _ in range(100):
        page = rs.page("orders", flt=flt, limit=limit, cursor=cursor, now_ms=NOW)
        seen += [i.id for i in page.items]
        cursor = page.next_cursor
        if cursor is None:
            assert page.complete
            return seen
    raise AssertionError("paging did not end")


def test_list_by_state_order_and_paging(rs: RetrySet, r: redis.Redis, mq_config: MQConfig) -> None:
    ids = _fill(r, mq_config.keys, 9, past=4)
    page = rs.page("orders", limit=3, now_ms=NOW)
    assert [i.id for i in page.items] == ids[:3]
    assert (page.total, page.due) == (9, 4)
    first = page.items[0]
    assert (first.item_topic, first.partition, first.retry_count, first.key) == (
        "orders",
        0,
        0,
        "k0",
    )
    assert first.payload == "payload 0"
    assert first.headers["partitionId"] == "0"
    assert first.due_ms == NOW - 4000
    assert first.original_id == "1-0"
    assert _all_pages(rs, RetryFilter(), 2) == ids
    assert _all_pages(rs, RetryFilter(state="due"), 3) == ids[:4]
    assert _all_pages(rs, RetryFilter(state="scheduled"), 2) == ids[4:]
    assert _all_pages(rs, RetryFilter(order="desc"), 4) == ids[::-1]
    assert _all_pages(rs, RetryFilter(state="due", order="desc"), 3) == ids[:4][::-1]
    assert _all_pages(rs, RetryFilter(state="scheduled", order="desc"), 2) == ids[4:][::-1]
    by_offset = rs.page("orders", flt=RetryFilter(state="scheduled"), limit=2, offset=3, now_ms=NOW)
    assert [i.id for i in by_offset.items] == ids[7:9]
    assert by_offset.next_cursor is None


def test_filters_key_text_partition(rs: RetrySet, r: redis.Redis, mq_config: MQConfig) -> None:
    ids = _fill(r, mq_config.keys, 12, past=6)
    assert _all_pages(rs, RetryFilter(key="k1"), 2) == [ids[i] for i in (1, 4, 7, 10)]
    assert _all_pages(rs, RetryFilter(text="PAYLOAD 1"), 1) == [ids[1], ids[10], ids[11]]
    assert _all_pages(rs, RetryFilter(partition=1, state="due"), 5) == [ids[i] for i in (1, 3, 5)]
    assert _all_pages(rs, RetryFilter(text="x-original-message-id"), 50) == ids
    with pytest.raises(InvalidArgumentError):
        rs.page("orders", flt=RetryFilter(key="k1"), offset=2)


def test_cursor_survives_removed_members_and_ties(
    rs: RetrySet, r: redis.Redis, mq_config: MQConfig
) -> None:
    ks = mq_config.keys
    members = sorted(schedule(r, ks, "orders", 0, f"t{i}", due_ms=NOW) for i in range(6))
    page = rs.page("orders", limit=3, now_ms=NOW)
    assert [i.id for i in page.items] == [_id(m) for m in members[:3]]
    rs.delete("orders", [page.items[-1].id])  # the cursor's member leaves the set
    rest = rs.page("orders", limit=10, cursor=page.next_cursor, now_ms=NOW)
    assert [i.id for i in rest.items] == [_id(m) for m in members[3:]]
    more = sorted(schedule(r, ks, "orders", 0, "t", due_ms=NOW + 1) for i in range(9))
    everything = [_id(m) for m in members[:2] + members[3:] + more]
    for flt in (RetryFilter(), RetryFilter(state="due"), RetryFilter(key="none-such")):
        want = everything if flt.state == "all" else everything[:5]
        want = [] if flt.key else want
        for limit in (1, 2, 4):
            assert _all_pages(rs, flt, limit) == want
            desc = RetryFilter(state=flt.state, order="desc", key=flt.key)
            assert _all_pages(rs, desc, limit) == sorted(want, key=everything.index)[::-1]


def test_retry_now_moves_named_items_once(
    rs: RetrySet, r: redis.Redis, mq_config: MQConfig
) -> None:
    ks = mq_config.keys
    later = schedule(
        r, ks, "orders", 1, "again", due_ms=NOW + 3_600_000, key="k", original_id="9-0"
    )
    other = schedule(r, ks, "orders", 0, "stays", due_ms=NOW + 10)
    out = rs.retry_now("orders", [_id(later)])
    assert (out.requested, out.retried, out.missing) == (1, 1, 0)
    [(_, fields)] = r.xrange("stream:topic:orders:p:1")
    assert fields[b"payload"] == b"again"
    assert fields[b"originalMessageId"] == b"9-0"
    assert fields[b"key"] == b"k"
    assert not r.exists(later)
    again = rs.retry_now("orders", [_id(later)])
    assert (again.retried, again.missing) == (0, 1)
    assert r.xlen("stream:topic:orders:p:1") == 1
    assert r.zrange(ks.retry_zset("orders"), 0, -1) == [other.encode()]


def test_delete_named_and_matching(rs: RetrySet, r: redis.Redis, mq_config: MQConfig) -> None:
    ids = _fill(r, mq_config.keys, 10, past=5)
    out = rs.delete("orders", [ids[0], ids[0], ids[1]])
    assert (out.requested, out.deleted, out.missing) == (2, 2, 0)
    assert rs.delete("orders", [ids[0]]).missing == 1
    assert not r.exists(mq_config.keys.retry_item("orders", ids[0]))
    gone = rs.delete_matching("orders", RetryFilter(state="due"), now_ms=NOW)
    assert (gone.deleted, gone.more) == (3, False)
    assert sorted(gone.ids) == sorted(ids[2:5])
    moved = rs.retry_matching("orders", RetryFilter(key="k0"), max_items=1, now_ms=NOW)
    assert (moved.retried, moved.more) == (1, True)
    moved2 = rs.retry_matching("orders", RetryFilter(key="k0"), cursor=moved.next_cursor)
    assert moved2.retried == 1
    assert not moved2.more
    assert r.zcard(mq_config.keys.retry_zset("orders")) == 3


def test_bad_input_writes_nothing(rs: RetrySet, r: redis.Redis, mq_config: MQConfig) -> None:
    ids = _fill(r, mq_config.keys, 3, past=3)
    before = r.zcard(mq_config.keys.retry_zset("orders"))
    for bad in (["../x"], [ids[0], "a b"], [], ["x" * 101]):
        with pytest.raises(InvalidArgumentError):
            rs.delete("orders", bad)
        with pytest.raises(InvalidArgumentError):
            rs.retry_now("orders", bad)
    with pytest.raises(UnknownTopicError):
        rs.delete("nope", [ids[0]])
    with pytest.raises(InvalidArgumentError):
        rs.page("orders", cursor="not-a-cursor")
    with pytest.raises(InvalidArgumentError):
        RetryFilter(state="soon")
    with pytest.raises(UnknownTopicError):
        rs.page("nope")
    with pytest.raises(UnknownMessageError):
        rs.get("orders", "0" * 32)
    assert r.zcard(mq_config.keys.retry_zset("orders")) == before
    assert r.xlen("stream:topic:orders:p:0") == 0


def test_java_items_plain_and_kryo(rs: RetrySet, r: redis.Redis, mq_config: MQConfig) -> None:
    ks = mq_config.keys
    java = ks.retry_item("orders", "5b0e0c5e-1f2a-4c5d-9e8f-0a1b2c3d4e5f")
    r.hset(
        java,
        mapping={  # Java's RetryScheduler through StringCodec
            "topic": "orders",
            "partitionId": "1",
            "payload": json.dumps({"order": 7}),
            "key": "",
            "headers": json.dumps({"x-runtime-error-message": "boom <b>"}),
            "retryCount": "abc",
            "maxRetries": "3",
            "originalMessageId": "",
        },
    )
    r.zadd(ks.retry_zset("orders"), {java: NOW - 1.0})
    kryo_item = ks.retry_item("orders", "kryo-1")
    r.hset(
        kryo_item,
        mapping={
            kryo.encode("topic"): kryo.encode("orders"),
            kryo.encode("partitionId"): kryo.encode(0),
            kryo.encode("payload"): kryo.encode("café"),
            kryo.encode("headers"): kryo.encode({"x-runtime-error-type": "E"}),
            kryo.encode("retryCount"): kryo.encode(2),
        },
    )
    r.zadd(ks.retry_zset("orders"), {kryo_item: NOW})
    r.zadd(ks.retry_zset("orders"), {"some-other-key": NOW + 5})
    items = rs.page("orders", now_ms=NOW).items
    plain, kry, foreign = items
    assert plain.id == "5b0e0c5e-1f2a-4c5d-9e8f-0a1b2c3d4e5f"
    assert plain.encoding == "plain"
    assert (plain.key, plain.original_id, plain.retry_count, plain.partition) == (
        None,
        None,
        None,
        1,
    )
    assert plain.headers == {"x-runtime-error-message": "boom <b>"}
    assert plain.payload == '{"order": 7}'
    assert (kry.encoding, kry.payload, kry.retry_count, kry.partition) == (
        "java-kryo",
        "café",
        2,
        0,
    )
    assert kry.headers == {"x-runtime-error-type": "E"}
    assert foreign.encoding == "missing"
    assert not foreign.actionable
    out = rs.retry_now("orders", [plain.id, kry.id])
    assert (out.retried, out.skipped) == (1, 1)
    assert r.exists(kryo_item)  # a retry would drop it, as Java's mover does: left for a look
    [(_, fields)] = r.xrange("stream:topic:orders:p:1")
    assert fields[b"payload"] == b'{"order": 7}'


def test_odd_members_are_listed_never_fail(
    rs: RetrySet, r: redis.Redis, mq_config: MQConfig
) -> None:
    ks = mq_config.keys
    zset = ks.retry_zset("orders")
    r.set(ks.retry_item("orders", "a-string"), "not a hash")
    r.zadd(zset, {ks.retry_item("orders", "a-string"): NOW, b"\xff\xfe": NOW + 1})
    r.zadd(zset, {ks.retry_item("orders", "forever"): float("inf")})
    r.zadd(zset, {ks.retry_item("orders", "ancient"): -5})
    items = rs.page("orders", now_ms=NOW).items
    assert items[0].id == "ancient"
    stringy = items[1]
    assert stringy.id == "a-string"
    assert stringy.problem is not None
    assert stringy.problem.startswith("not a retry item hash")
    assert not items[2].actionable
    assert items[3].due_ms == 2**63 - 1
    assert (
        rs.page("orders", flt=RetryFilter(state="scheduled"), now_ms=NOW).items[-1].id == "forever"
    )
    assert rs.delete("orders", ["a-string", "forever"]).deleted == 2


def test_page_of_big_items_is_byte_bounded_and_its_cursor_goes_on(
    rs: RetrySet, r: redis.Redis, mq_config: MQConfig
) -> None:
    """Big payloads: a page stops after about max_scan_bytes of items (not the whole
    max_scan of them), not complete, and its cursors walk every item exactly once."""
    from mqcore.retries.browse import read_page

    big = "x" * (64 * 1024)
    ids = [
        _id(schedule(r, mq_config.keys, "orders", 0, f"{i} {big}", due_ms=NOW + i))
        for i in range(100)
    ]
    flt = RetryFilter(text="no such text")
    first = read_page(
        r, mq_config.keys, "orders", flt=flt, now_ms=NOW, limit=10, max_scan_bytes=2**20
    )
    assert first.items == []
    assert first.scanned < 100
    assert not first.complete
    assert first.next_cursor
    seen: list[str] = []
    cursor, pages = None, 0
    while True:
        page = read_page(
            r, mq_config.keys, "orders", flt=RetryFilter(text="x"), now_ms=NOW, limit=500,
            cursor=cursor, max_scan_bytes=2**20,
        )  # fmt: skip
        seen += [i.id for i in page.items]
        pages += 1
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == ids
    assert pages >= 2


def test_retry_now_leaves_an_item_that_is_no_hash_and_moves_the_rest(
    rs: RetrySet, r: redis.Redis, mq_config: MQConfig
) -> None:
    """Odd data: an item key that is a list (not a hash) is skipped, left in place; the
    other items of the same batch are retried (it failed the whole batch before)."""
    ks = mq_config.keys
    good = schedule(r, ks, "orders", 1, "again", due_ms=NOW)
    odd = ks.retry_item("orders", "listy")
    r.rpush(odd, "not a hash")
    r.zadd(ks.retry_zset("orders"), {odd: NOW})
    out = rs.retry_now("orders", [_id(good), "listy"])
    assert (out.requested, out.retried, out.skipped, out.missing) == (2, 1, 1, 0)
    assert r.xlen("stream:topic:orders:p:1") == 1
    assert r.zrange(ks.retry_zset("orders"), 0, -1) == [odd.encode()]
    every = rs.retry_matching("orders", RetryFilter(), now_ms=NOW)
    assert (every.retried, every.skipped) == (0, 1)


def test_a_filtered_page_skips_nothing_while_members_before_it_leave(
    rs: RetrySet, r: redis.Redis, mq_config: MQConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page that reads chunk after chunk (a narrowing filter) while the retry mover takes
    members before its position: each chunk is read after the last member read, where it
    stands then, so no member is skipped (counted ranks would skip as many as left)."""
    from mqcore.retries import browse

    ks = mq_config.keys
    zset = ks.retry_zset("orders")
    wanted = []
    for i in range(1000):
        member = schedule(r, ks, "orders", 0, f"p{i}", due_ms=NOW - 10_000 + i,
                          key="want" if i % 10 == 0 else "other")  # fmt: skip
        if i % 10 == 0:
            wanted.append(_id(member))
    read_hashes, calls = browse._read_hashes, [0]

    def mover_meanwhile(client, members):  # type: ignore[no-untyped-def]
        calls[0] += 1
        if calls[0] % 3 == 1:  # the mover takes the 50 oldest members not wanted
            gone = [m for m in r.zrange(zset, 0, 199) if r.hget(m, "key") == b"other"][:50]
            r.zrem(zset, *gone)
        return read_hashes(client, members)

    monkeypatch.setattr(browse, "_read_hashes", mover_meanwhile)
    seen = _all_pages(rs, RetryFilter(key="want"), limit=500)
    assert sorted(seen) == sorted(wanted)
