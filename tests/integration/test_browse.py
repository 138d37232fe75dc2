"""mqcore.browse on a real redis-server: ordering, paging across partitions, start points,
filters, the scan bound, and one message's trace (groups, retries, dead letter)."""

from __future__ import annotations

import json

import pytest
import redis

from mqcore.admin import Admin
from mqcore.browse import BrowseQuery, ExpressionError, Filters, browse_topic, message_trace
from mqcore.browse.scan import decode_cursor
from mqcore.config import MQConfig
from mqcore.errors import InvalidArgumentError, UnknownPartitionError, UnknownTopicError
from tests.integration.raw_java import create_topic, partition_fields

pytestmark = pytest.mark.redis


def _add(
    r: redis.Redis, mq_config: MQConfig, partition: int, ms: int, payload: object, **kw: object
) -> str:
    text = payload if isinstance(payload, str) else json.dumps(payload)
    fields = partition_fields("t", partition, text, **kw)  # type: ignore[arg-type]
    return str(r.xadd(mq_config.keys.partition("t", partition), fields, id=f"{ms}-0").decode())


@pytest.fixture
def topic(r: redis.Redis, mq_config: MQConfig) -> dict[int, str]:
    """Three partitions; entry ms 1000..1029 round-robin, so a merge by id interleaves them."""
    create_topic(r, mq_config.keys, "t", 3, groups=("g",))
    ids: dict[int, str] = {}
    for i in range(30):
        ms = 1000 + i
        ids[ms] = _add(
            r, mq_config, i % 3, ms,
            {"customer": f"c-{i % 4}", "amount": i * 10, "tags": ["vip"] if i % 5 == 0 else []},
            key=f"k-{i % 2}",
            headers={"source": "web" if i % 2 else "batch"},
        )  # fmt: skip
    return ids


def page(mq_config: MQConfig, r: redis.Redis, filters: Filters | None = None, **kw: object):  # type: ignore[no-untyped-def]
    return browse_topic(Admin(mq_config, r), "t", BrowseQuery(**kw), filters)  # type: ignore[arg-type]


NEW = range(29, -1, -1)  # the fixture's i, newest first


def ms_of(messages: list) -> list[int]:  # type: ignore[type-arg]
    return [int(m.id.split("-")[0]) for m in messages]


def test_newest_first_across_partitions_merges_by_id(
    r: redis.Redis, mq_config: MQConfig, topic: dict[int, str]
) -> None:
    got = page(mq_config, r, limit=7)
    assert ms_of(got.messages) == list(range(1029, 1022, -1))
    assert [m.partition for m in got.messages] == [(ms - 1000) % 3 for ms in ms_of(got.messages)]
    assert got.next_cursor
    assert not got.stopped_at_bound
    assert got.messages[0].key == "k-1"
    assert got.messages[0].headers["source"] == "web"


def test_oldest_first_and_cursor_pages_cover_everything_once(
    r: redis.Redis, mq_config: MQConfig, topic: dict[int, str]
) -> None:
    seen: list[int] = []
    cursor = None
    for _ in range(10):
        got = page(mq_config, r, order="oldest", limit=8, cursor=cursor)
        seen += ms_of(got.messages)
        cursor = got.next_cursor
        if cursor is None:
            break
    assert seen == list(range(1000, 1030))
    assert cursor is None  # the last page knew it reached every partition's end


def test_newest_paging_with_entries_added_between_pages(
    r: redis.Redis, mq_config: MQConfig, topic: dict[int, str]
) -> None:
    first = page(mq_config, r, limit=10)
    _add(r, mq_config, 0, 5000, {"late": True})  # newer than the cursor: not in later pages
    second = page(mq_config, r, limit=10, cursor=first.next_cursor)
    assert ms_of(first.messages + second.messages) == list(range(1029, 1009, -1))


def test_one_partition(r: redis.Redis, mq_config: MQConfig, topic: dict[int, str]) -> None:
    got = page(mq_config, r, partitions=[1], order="oldest", limit=100)
    assert ms_of(got.messages) == list(range(1001, 1030, 3))
    assert got.next_cursor is None
    assert got.partitions == [1]
    with pytest.raises(UnknownPartitionError):
        page(mq_config, r, partitions=[3])


def test_start_from_id_and_from_time(
    r: redis.Redis, mq_config: MQConfig, topic: dict[int, str]
) -> None:
    assert ms_of(page(mq_config, r, order="oldest", from_id="1010-0", limit=3).messages) == [
        1010, 1011, 1012,
    ]  # fmt: skip
    assert ms_of(page(mq_config, r, order="newest", from_id="1010-0", limit=3).messages) == [
        1010, 1009, 1008,
    ]  # fmt: skip
    assert ms_of(page(mq_config, r, order="oldest", from_ms=1020, limit=2).messages) == [1020, 1021]
    assert ms_of(page(mq_config, r, order="newest", from_ms=1020, limit=2).messages) == [1020, 1019]


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        (Filters.of(key="k-1"), [ms for ms in range(1029, 999, -1) if ms % 2]),
        (Filters.of(header="source=batch"), [ms for ms in range(1029, 999, -1) if ms % 2 == 0]),
        (Filters.of(header="source"), list(range(1029, 999, -1))),
        (Filters.of(header="nope"), []),
        (Filters.of(text='"C-3"'), [ms for ms in range(1029, 999, -1) if (ms - 1000) % 4 == 3]),
        (Filters.of(expression='payload.customer == "c-1"'), [1000 + i for i in NEW if i % 4 == 1]),
        (Filters.of(expression="payload.amount > 250"), [1029, 1028, 1027, 1026]),
        (Filters.of(expression='payload.amount >= 250 and key == "k-0"'), [1028, 1026]),
        (
            Filters.of(expression='payload.tags contains "vip" or payload.amount < 20'),
            [1000 + i for i in NEW if i % 5 == 0 or i < 2],
        ),
        (
            Filters.of(expression='payload.customer != "c-0" and payload.amount <= 30'),
            [1003, 1002, 1001],
        ),
        (
            Filters.of(key="k-0", expression="partition == 1"),
            [1000 + i for i in NEW if i % 2 == 0 and i % 3 == 1],
        ),
    ],
)
def test_filters(
    r: redis.Redis,
    mq_config: MQConfig,
    topic: dict[int, str],
    filters: Filters,
    expected: list[int],
) -> None:
    got = page(mq_config, r, filters=filters, limit=100)
    assert ms_of(got.messages) == expected
    assert got.scanned == 30
    assert not got.stopped_at_bound
    assert got.next_cursor is None


def test_scan_bound_is_reported_and_the_cursor_goes_on(
    r: redis.Redis, mq_config: MQConfig, topic: dict[int, str]
) -> None:
    rare = Filters.of(expression="payload.amount == 20 or payload.amount == 250")
    first = page(mq_config, r, filters=rare, limit=10, max_scan=7)
    assert first.scanned == 7
    assert first.stopped_at_bound
    assert ms_of(first.messages) == [1025]
    assert first.next_cursor is not None
    positions = decode_cursor(first.next_cursor, "newest", [0, 1, 2])
    assert positions == {0: "1024-0", 1: "1025-0", 2: "1023-0"}
    rest = page(mq_config, r, filters=rare, limit=10, max_scan=100, cursor=first.next_cursor)
    assert ms_of(rest.messages) == [1002]
    assert rest.scanned == 23
    assert not rest.stopped_at_bound


def test_big_payloads_are_read_in_small_counts(r: redis.Redis, mq_config: MQConfig) -> None:
    create_topic(r, mq_config.keys, "t", 1)
    blob = "x" * 200_000
    for i in range(12):
        _add(r, mq_config, 0, 2000 + i, blob)
    r.config_set("slowlog-log-slower-than", 0)
    r.slowlog_reset()
    got = page(mq_config, r, limit=12, filters=Filters.of(text="nothing"))
    assert got.scanned == 12
    counts = [  # SLOWLOG lists the newest first
        int(e["command"].split()[-1])
        for e in reversed(r.slowlog_get(128))
        if e["command"].startswith(b"XREVRANGE")
    ]
    assert counts[0] == 8  # the first read of a partition: a probe
    assert max(counts[1:]) == 1  # then sized by bytes: one 200 KB entry per read
    r.config_set("slowlog-log-slower-than", 10000)


def test_bad_input_is_refused(r: redis.Redis, mq_config: MQConfig, topic: dict[int, str]) -> None:
    for kw in (
        {"order": "sideways"},
        {"limit": 0},
        {"limit": 501},
        {"max_scan": 0},
        {"max_scan": 10**6},
        {"from_id": "nope"},
        {"from_id": "1-0", "from_ms": 5},
        {"from_ms": -1},
        {"cursor": "garbage!"},
        {"cursor": "eyJ2IjoxfQ"},
    ):
        with pytest.raises(InvalidArgumentError):
            page(mq_config, r, **kw)
    newest = page(mq_config, r, limit=1).next_cursor
    with pytest.raises(InvalidArgumentError, match="other order"):
        page(mq_config, r, order="oldest", cursor=newest)
    with pytest.raises(InvalidArgumentError, match="other partitions"):
        page(mq_config, r, partitions=[1], cursor=newest)
    with pytest.raises(ExpressionError):
        Filters.of(expression="payload.a = 1")
    with pytest.raises(InvalidArgumentError):
        Filters.of(header="=v")
    with pytest.raises(UnknownTopicError):
        browse_topic(Admin(mq_config, r), "nope", BrowseQuery())


def test_trace_groups_pending_acked_and_not_delivered(r: redis.Redis, mq_config: MQConfig) -> None:
    keys = mq_config.keys
    create_topic(r, keys, "t", 1, groups=("a", "b", "c"))
    first = _add(r, mq_config, 0, 1000, {"n": 1})
    _add(r, mq_config, 0, 1001, {"n": 2})
    key = keys.partition("t", 0)
    r.xreadgroup("a", "worker-1", {key: ">"}, count=1)  # a: pending, delivered once
    r.xclaim(key, "a", "worker-2", 0, [first])  # now worker-2, twice
    r.xreadgroup("b", "w", {key: ">"}, count=1)
    r.xack(key, "b", first)  # b: acked; c: never read
    admin = Admin(mq_config, r)
    trace = message_trace(admin, admin.message("t", 0, first))
    by = {g["group"]: g for g in trace.groups}
    assert by["a"]["state"] == "pending"
    assert by["a"]["consumer"] == "worker-2"
    assert by["a"]["deliveries"] == 2
    assert by["b"]["state"] == "acked"
    assert by["c"]["state"] == "not_delivered"
    assert trace.root_id == first
    assert trace.previous_id is None
    assert trace.retries == []
    assert trace.dead_letters == []
    assert trace.dlq_complete


def test_trace_retries_and_dead_letter(r: redis.Redis, mq_config: MQConfig) -> None:
    from mqcore.acks import PendingEntry, dead_letter, schedule_retry
    from mqcore.retry import RetryMover

    keys = mq_config.keys
    create_topic(r, keys, "t", 1, groups=("g",))
    _add(r, mq_config, 0, 900, {"other": True})
    first = _add(r, mq_config, 0, 1000, {"n": 1})
    key = keys.partition("t", 0)
    admin = Admin(mq_config, r)

    def fail_next(entry_id: str, *, to_dlq: bool = False) -> None:
        fields = {k.decode(): v for k, v in r.xrange(key, entry_id, entry_id)[0][1].items()}
        if to_dlq:
            dead_letter(r, keys, PendingEntry("t", "g", 0, entry_id, None), reason="boom")
        else:
            schedule_retry(
                r, keys, PendingEntry("t", "g", 0, entry_id, None), fields=fields, due_ms=0
            )

    r.xreadgroup("g", "w", {key: ">"})
    fail_next(first)
    scheduled = message_trace(admin, admin.message("t", 0, first))
    assert [s["retried_from"] for s in scheduled.scheduled] == [first]
    assert scheduled.scheduled[0]["retry_count"] == 1
    RetryMover(mq_config, client=r).move_due("t")
    [(retry_id, _)] = r.xreadgroup("g", "w", {key: ">"})[0][1]
    retry_id = retry_id.decode()
    fail_next(retry_id, to_dlq=True)
    trace = message_trace(admin, admin.message("t", 0, first))
    assert [x["id"] for x in trace.retries] == [retry_id]
    assert trace.scheduled == []
    assert [(d["original_id"], d["retry_count"]) for d in trace.dead_letters] == [(retry_id, 1)]
    of_retry = message_trace(admin, admin.message("t", 0, retry_id))
    assert of_retry.root_id == first
    assert of_retry.previous_id == first
    assert [d["id"] for d in of_retry.dead_letters] == [trace.dead_letters[0]["id"]]
    assert {g["group"]: g["state"] for g in trace.groups} == {"g": "acked"}


def test_trace_reads_big_entries_in_small_counts(r: redis.Redis, mq_config: MQConfig) -> None:
    create_topic(r, mq_config.keys, "t", 1, groups=("g",))
    first = _add(r, mq_config, 0, 1000, {"n": 1})
    blob = "y" * 300_000
    for i in range(15):
        _add(r, mq_config, 0, 1001 + i, blob)
    admin = Admin(mq_config, r)
    message = admin.message("t", 0, first)
    r.config_set("slowlog-log-slower-than", 0)
    r.slowlog_reset()
    trace = message_trace(admin, message)
    entries = r.slowlog_get(128)
    r.config_set("slowlog-log-slower-than", 10000)
    assert trace.retries_scanned == 15
    assert trace.retries_complete
    counts = [  # SLOWLOG lists the newest first
        int(e["command"].split()[-1])
        for e in reversed(entries)
        if e["command"].startswith(b"XRANGE stream:topic:t:p:0 ")
    ]
    assert counts[0] == 8  # the probe
    assert max(counts[1:]) == 1  # then sized by bytes: one 300 KB entry per read


def test_odd_payloads_never_break_an_expression(r: redis.Redis, mq_config: MQConfig) -> None:
    create_topic(r, mq_config.keys, "t", 1)
    for i, payload in enumerate(["[" * 100_000, "not json", "NaN", "\u00ff\u0000", '{"a": 1}']):
        _add(r, mq_config, 0, 1000 + i, payload)
    r.xadd(mq_config.keys.partition("t", 0), {"payload": b"\xff\xfe"}, id="2000-0")
    got = page(mq_config, r, filters=Filters.of(expression="payload.a == 1 or payload"), limit=10)
    assert ms_of(got.messages) == [1004, 1003, 1002, 1001, 1000]


def test_big_payloads_stop_a_page_at_its_byte_bound_and_the_cursor_goes_on(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    """A filter that matches nothing over big entries: the page stops after about
    max_scan_bytes (not max_scan entries of them), says so, and its cursors walk every
    entry exactly once; the trace's readers stop the same way (not complete)."""
    from mqcore.range_reader import RangeReader

    create_topic(r, mq_config.keys, "t", 2, groups=("g",))
    big = "x" * (64 * 1024)
    ids = [_add(r, mq_config, i % 2, 5000 + i, big, key=f"k{i}") for i in range(60)]
    admin = Admin(mq_config)
    query = BrowseQuery(order="oldest", max_scan=1000, max_scan_bytes=2**20)
    page = browse_topic(admin, "t", query, Filters.of(key="none"))
    assert page.messages == []
    assert page.scanned < 60
    assert page.stopped_at_bound
    assert page.next_cursor
    seen: list[str] = []
    cursor = None
    while True:
        q = BrowseQuery(order="oldest", limit=500, max_scan_bytes=2**20, cursor=cursor)
        page = browse_topic(admin, "t", q)
        seen += [m.id for m in page.messages]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == ids
    reader = RangeReader(r, mq_config.keys.partition("t", 0), "-", 1000, "read", max_bytes=2**20)
    assert sum(len(entries) for entries in reader) < 30
    assert not reader.ended
