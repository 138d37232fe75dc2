"""P21: a page of 50 retry items out of a 1M-item retry set vs the raw ZRANGE.

Raw: ``ZRANGE retry lo hi BYSCORE LIMIT 0 50 WITHSCORES`` and one pipeline of the 50 item
hashes (``HGETALL``), decoded by redis-py, nothing else. Ours:
:meth:`mqcore.retries.RetrySet.page` (counts, where the range begins, the page, the items
decoded), on the due items (first page), the scheduled ones newest first, and a page
deep in the set through a cursor. ``P21.maxcmd``: the longest single command while
listing, a key-filtered page (4,000 items read) and retry now / delete of 50 items
(SLOWLOG; never over 5 ms).
"""

from __future__ import annotations

import time
from typing import Any

from bench.common import BenchContext, Result, best_of, elapsed_ms, slowlog_max_us
from mqcore.config import MQConfig
from mqcore.keys import KeySpace
from mqcore.retries import RetryFilter, RetrySet

NOW = 1_700_000_000_000
_FILL = """
-- KEYS[1] = retry zset / ARGV[1] = item key prefix / ARGV[2] = first / ARGV[3] = count
-- ARGV[4] = now: the first half of the items is due, the rest scheduled (1 ms apart)
local first, n, now = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local total = tonumber(ARGV[5])
for i = first, first + n - 1 do
  local key = ARGV[1] .. string.format('%032x', i)
  redis.call('HSET', key, 'topic', 'big', 'partitionId', tostring(i % 4),
    'payload', '{"order":' .. i .. '}', 'key', 'k' .. (i % 1000), 'retryCount', '1',
    'maxRetries', '3', 'originalMessageId', i .. '-0',
    'headers', '{"x-runtime-error-message":"boom","partitionId":"' .. (i % 4) .. '"}')
  redis.call('ZADD', KEYS[1], now - total / 2 + i, key)
end
return n
"""


def _fill(client: Any, keys: KeySpace, total: int) -> None:
    client.sadd(keys.registry(), "big")
    client.hset(keys.meta("big"), "partitionCount", 4)
    fill = client.register_script(_FILL)
    prefix, zset = keys.retry_item_prefix("big"), keys.retry_zset("big")
    for first in range(0, total, 20_000):
        n = min(20_000, total - first)
        fill(keys=[zset], args=[prefix, first, n, NOW, total])


def _raw(client: Any, keys: KeySpace, lo: Any, hi: Any) -> int:
    rows = client.zrangebyscore(keys.retry_zset("big"), lo, hi, start=0, num=50, withscores=True)
    pipe = client.pipeline(transaction=False)
    for member, _score in rows:
        pipe.hgetall(member)
    return len(pipe.execute())


def _deep_cursor(rs: RetrySet, total: int) -> str:
    """A cursor 3/4 into the set: the page after it is read by rank, not by skipping."""
    page = rs.page("big", limit=1, offset=total * 3 // 4, now_ms=NOW)
    assert page.next_cursor is not None
    return page.next_cursor


def _writes(rs: RetrySet) -> None:
    due = rs.page("big", flt=RetryFilter(state="due"), limit=100, now_ms=NOW).items
    assert rs.retry_now("big", [i.id for i in due[:50]]).retried == 50
    assert rs.delete("big", [i.id for i in due[50:]]).deleted == 50


def run(ctx: BenchContext) -> list[Result]:
    total = ctx.n(1_000_000, 20_000)
    with ctx.fresh_redis() as (_server, client, config):
        keys = config.keys
        started = time.perf_counter()
        _fill(client, keys, total)
        build_s = time.perf_counter() - started
        cfg = MQConfig(url=config.url)
        rs = RetrySet(cfg, client)
        ctx.measuring()
        cursor = _deep_cursor(rs, total)
        cases = [
            ("P21", "page of 50 due retry items out of", RetryFilter(state="due"), None,
             ("-inf", NOW)),
            ("P21.sched", "page of 50 scheduled items, latest first, of",
             RetryFilter(state="scheduled", order="desc"), None, (f"({NOW}", "+inf")),
            ("P21.deep", "page of 50 after a cursor 3/4 into", RetryFilter(), cursor,
             (NOW + total // 4, "+inf")),
        ]  # fmt: skip
        results = []
        worst_us, worst_cmd = 0, ""
        for rid, what, flt, at, (lo, hi) in cases:
            page = rs.page("big", flt=flt, limit=50, cursor=at, now_ms=NOW)
            assert len(page.items) == 50
            assert _raw(client, keys, lo, hi) == 50
            raw = best_of(lambda lo=lo, hi=hi: elapsed_ms(lambda: _raw(client, keys, lo, hi)), 5)
            ours = best_of(
                lambda f=flt, c=at: elapsed_ms(
                    lambda: rs.page("big", flt=f, limit=50, cursor=c, now_ms=NOW)
                ),
                5,
            )
            us, cmd = slowlog_max_us(
                client, lambda f=flt, c=at: rs.page("big", flt=f, limit=50, cursor=c, now_ms=NOW)
            )
            if us > worst_us:
                worst_us, worst_cmd = us, cmd
            results.append(
                Result(
                    rid, f"{what} {total:,} (library call)", ours, raw, "ms", "<= 2x",
                    extra={"max_command_us": us, "max_command": cmd, "build_s": round(build_s, 1)},
                )
            )  # fmt: skip
        keyed = RetryFilter(key="k7")
        for fn in (
            lambda: rs.page("big", flt=keyed, limit=50, max_scan=4000, now_ms=NOW),
            lambda: _writes(rs),
        ):
            us, cmd = slowlog_max_us(client, fn)
            if us > worst_us:
                worst_us, worst_cmd = us, cmd
        results.append(
            Result(
                "P21.maxcmd",
                "longest Redis command listing, filtering, retrying, deleting (vs 5 ms)",
                worst_us / 1000, 5.0, "ms", "<= 1.0x", extra={"max_command": worst_cmd},
            )
        )  # fmt: skip
        return results
