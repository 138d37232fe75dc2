"""The console store writes big passes in bounded commands: no ZADD or script call
carries more than ``MEMBERS_PER_COMMAND`` members, and batched trims keep every series."""

from __future__ import annotations

import math
import socket
import time

import pytest
import redis
from django.test import override_settings
from redis.backoff import NoBackoff
from redis.retry import Retry

from dashboard import store
from dashboard.clusters import console_keys, console_redis, console_store
from dashboard.store import POINT, ConsoleStore
from dashboard.store.batches import (
    BULK_PER_EXECUTE,
    MEMBERS_PER_COMMAND,
    chunks,
    send_batched,
)
from mqcore.errors import ConnectionLostError
from mqcore.models import ClusterSnapshot
from mqcore.wire import BIG_ARGUMENT, Chunked, Wire

pytestmark = [pytest.mark.redis]


@pytest.fixture
def cs(console_r: redis.Redis) -> ConsoleStore:
    return ConsoleStore(console_redis(), console_keys())


def _pass(
    cs: ConsoleStore,
    now_ms: int,
    triples: list[tuple[str, str, float]],
    cluster: str = "big",
    *,
    refresh: bool = True,
) -> None:
    # the coarsest roll-up (10m) refreshes the whole index; the 1m one alone does not
    rollups = {"1m": now_ms // 60_000 - 1}
    if refresh:
        rollups["10m"] = now_ms // 600_000 - 1
    cs.pass_write(
        cluster,
        now_ms=now_ms,
        snapshot=ClusterSnapshot(taken_at_ms=now_ms, topics=[]),
        state={},
        lease_state=None,
        incidents=[],
        points={"raw": triples},
        health={"ok": True},
        alerts_open={},
        alerts_resolved=[],
        slot=None,
        rollups=rollups,
    )


def _calls(client: redis.Redis, command: str) -> int:
    stats = client.info("commandstats").get(f"cmdstat_{command}") or {}
    return int(stats.get("calls") or 0)


def test_chunks_never_exceed_the_member_limit() -> None:
    sizes = [len(part) for part in chunks(list(range(2 * MEMBERS_PER_COMMAND + 1)))]
    assert sizes == [MEMBERS_PER_COMMAND, MEMBERS_PER_COMMAND, 1]
    assert list(chunks([])) == []


def test_index_of_a_big_pass_goes_out_in_chunks(cs: ConsoleStore, console_r: redis.Redis) -> None:
    n = 1_200
    triples = [("lag", f"topic-{i:05d}", float(i)) for i in range(n)]
    zadd_before = _calls(console_r, "zadd")
    _pass(cs, int(time.time()) * 1000, triples)
    zadds = _calls(console_r, "zadd") - zadd_before
    assert zadds >= math.ceil(n / MEMBERS_PER_COMMAND)  # 1,200 members: 5 ZADDs at least
    assert console_r.zcard(console_keys().series_index("big")) == n
    got = console_store().series_many(
        "big", "lag", ["topic-00000", f"topic-{n - 1:05d}"], since_ms=0
    )
    assert [v for _, v in got["topic-00000"]] == [0.0]
    assert [v for _, v in got[f"topic-{n - 1:05d}"]] == [float(n - 1)]


def test_pass_after_script_flush_still_writes(cs: ConsoleStore, console_r: redis.Redis) -> None:
    now = int(time.time()) * 1000
    _pass(cs, now - 1000, [("lag", "orders", 1.0)])
    console_r.script_flush()  # as after a restart of the store
    _pass(cs, now, [("lag", "orders", 2.0)])
    assert console_store().series_get("big", "lag", "orders", since_ms=now - 5000) == [
        (now - 1000, 1.0),
        (now, 2.0),
    ]


def test_first_pass_on_a_fresh_store_loads_the_scripts_first(console_r: redis.Redis) -> None:
    """A store without the scripts (new, restarted) gets them before the first calls: no
    call of the first pass comes back NOSCRIPT to go out again."""
    console_r.script_flush()
    kwargs = console_r.connection_pool.connection_kwargs
    fresh = redis.Redis(host=kwargs["host"], port=kwargs["port"], db=kwargs["db"])
    try:
        console_r.config_resetstat()
        _pass(ConsoleStore(fresh, console_keys()), int(time.time()) * 1000, [("lag", "t", 1.0)])
        stats = console_r.info("commandstats")["cmdstat_evalsha"]
        assert (stats["calls"], stats["failed_calls"], stats["rejected_calls"]) == (2, 0, 0)
    finally:
        fresh.close()


@override_settings(SERIES_RAW_RETENTION_S=10, COLLECT_INTERVAL_S=1)
def test_trim_in_batches_keeps_every_series_in_retention(
    cs: ConsoleStore, console_r: redis.Redis
) -> None:
    n = 2 * BULK_PER_EXECUTE + 7  # more series than one trim batch
    now = int(time.time()) * 1000
    for k in range(30):
        triples = [("lag", f"t{i}", float(k)) for i in range(n)]
        _pass(cs, now - (29 - k) * 1000, triples)
    for i in range(n):
        raw = console_r.get(console_keys().series("big", "raw", "lag", f"t{i}"))
        assert raw is not None
        assert len(raw) // POINT.size <= 13  # 11 points in retention + slack of 2
    assert console_store().series_get("big", "lag", f"t{n - 1}", since_ms=now - 3000)[-1] == (
        now,
        29.0,
    )


def test_transaction_sends_a_big_value_as_it_is(console_r: redis.Redis) -> None:
    big = bytes(range(256)) * (BIG_ARGUMENT // 128)  # any bytes, CR LF included
    replies = Wire(console_redis(), 1).transaction(
        [
            ("SET", "tx:big", big),
            ("SET", "tx:small", b"x"),
            ("HSET", "tx:h", "f", big),
            ("DEL", "z"),
        ],
    )
    assert replies == [b"OK", b"OK", 1, 0]
    assert console_r.get("tx:big") == big
    assert console_r.get("tx:small") == b"x"
    assert console_r.hget("tx:h", "f") == big


def test_transaction_refused_in_part_writes_nothing(console_r: redis.Redis) -> None:
    client = console_redis()
    with pytest.raises(redis.ResponseError):
        Wire(client, 1).transaction(
            [("SET", "tx:a", b"1" * BIG_ARGUMENT), ("SET",), ("SET", "b", 1)]
        )
    assert console_r.exists("tx:a", "b") == 0
    with pytest.raises(redis.ResponseError):  # fails as it runs: the others stand, as in Redis
        Wire(client, 1).transaction([("SET", "tx:s", "v"), ("INCR", "tx:s"), ("SET", "tx:t", "w")])
    assert console_r.mget("tx:s", "tx:t") == [b"v", b"w"]
    assert client.ping()  # the connection went back to the pool in step


def test_a_background_send_to_a_lost_store_raises_when_read(console_r: redis.Redis) -> None:
    assert send_batched(console_redis(), [("SET", "bg", "1")], background=True)() == [b"OK"]
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    gone = redis.Redis(host="127.0.0.1", port=port, retry=Retry(NoBackoff(), 0))
    replies = send_batched(gone, [("SET", "bg", "2")], background=True)
    with pytest.raises((ConnectionLostError, redis.ConnectionError)):  # as a send now would
        replies()
    assert console_r.get("bg") == b"1"


def test_a_background_send_runs_every_round_trip_before_it_is_read(
    console_r: redis.Redis,
) -> None:
    """The store works through all the round trips while the caller goes on: the last
    command lands without the caller reading a reply."""
    cmds = [("SET", f"bg:{i}", i) for i in range(3 * BULK_PER_EXECUTE)]
    replies = send_batched(console_redis(), cmds, per_execute=BULK_PER_EXECUTE, background=True)
    try:
        deadline = time.monotonic() + 5
        while not console_r.exists(f"bg:{len(cmds) - 1}") and time.monotonic() < deadline:
            time.sleep(0.005)
        assert console_r.exists(f"bg:{len(cmds) - 1}")
    finally:
        assert replies() == [b"OK"] * len(cmds)


def test_a_series_is_indexed_by_the_pass_after_the_one_that_created_it(
    cs: ConsoleStore, console_r: redis.Redis
) -> None:
    """Only the coarsest roll-up and a process's first pass refresh the whole index; other
    passes index the series the pass before created (its script calls report them)."""
    index = console_keys().series_index("grow")
    now = int(time.time()) * 1000
    _pass(cs, now, [("lag", "a", 1.0)], "grow")
    assert console_r.zrange(index, 0, -1, withscores=True) == [(b"lag\x1fa", now)]
    zadds = _calls(console_r, "zadd")
    _pass(cs, now + 10_000, [("lag", "a", 2.0), ("lag", "b:x/0", 1.0)], "grow", refresh=False)
    assert _calls(console_r, "zadd") == zadds  # nothing to index yet: "b:x/0" is new
    _pass(cs, now + 20_000, [("lag", "a", 3.0), ("lag", "b:x/0", 2.0)], "grow", refresh=False)
    assert console_r.zrange(index, 0, -1, withscores=True) == [
        (b"lag\x1fa", now),  # not refreshed by these passes
        (b"lag\x1fb:x/0", now + 20_000),
    ]
    _pass(cs, now + 30_000, [("lag", "a", 4.0), ("lag", "b:x/0", 3.0)], "grow")
    assert console_r.zrange(index, 0, -1, withscores=True) == [
        (b"lag\x1fa", now + 30_000),
        (b"lag\x1fb:x/0", now + 30_000),
    ]


def test_series_of_vanished_entities_are_deleted_past_the_longest_retention(
    cs: ConsoleStore, console_r: redis.Redis
) -> None:
    keys = console_keys()
    now = int(time.time()) * 1000
    _pass(cs, now, [("lag", "old", 1.0), ("lag", "kept", 1.0)], "gc")
    _pass(cs, now + 10_000, [("lag", "kept", 2.0), ("lag", "late", 1.0)], "gc", refresh=False)
    later = now + max(t.retention_s for t in store.tiers()) * 1000 + 60_000
    _pass(cs, later, [("lag", "kept", 3.0)], "gc")
    assert not console_r.exists(keys.series("gc", "raw", "lag", "old"))
    assert console_r.exists(keys.series("gc", "raw", "lag", "kept"))
    # "late" was created after the last refresh: indexed by the pass after its own
    assert console_r.exists(keys.series("gc", "raw", "lag", "late"))
    assert console_r.zrange(keys.series_index("gc"), 0, -1) == [b"lag\x1fkept", b"lag\x1flate"]


def test_transaction_sends_a_chunked_value_as_its_parts_are_made(console_r: redis.Redis) -> None:
    """A big value made in parts while it is sent (a pass's snapshot JSON) lands whole; a part
    of another length than announced is refused before anything is written."""
    parts = [b"x" * BIG_ARGUMENT, b"\r\n" * 10, b"tail"]
    made: list[int] = []

    def make() -> list[bytes]:
        made.append(1)
        return parts

    chunked = Chunked(tuple(len(p) for p in parts), make)
    assert Wire(console_redis(), 1).transaction([("SET", "tx:parts", chunked), ("DEL", "z")]) == [
        b"OK",
        0,
    ]
    assert console_r.get("tx:parts") == b"".join(parts)
    assert made == [1]
    wrong = Chunked((1, 2), lambda: [b"a", b"bcd"])
    with pytest.raises((ValueError, redis.ConnectionError)):
        Wire(console_redis(), 1).transaction([("SET", "tx:wrong", wrong)])
    assert not console_r.exists("tx:wrong")
    assert console_redis().ping()
