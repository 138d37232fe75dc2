"""R7: retry mover concurrency - every retried message is re-added exactly once.

Four movers race over one retry backlog; then a mover's EVALSHA times out on
the client while Redis still runs it later, and the caller retries.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from mqcore import retry as retry_module
from mqcore.config import MQConfig
from mqcore.errors import ConnectionLostError
from mqcore.retry import RetryMover
from mqcore.scripts import call_script, lua_source
from mqcore.topics import Topics
from tests.integration.retry_items import schedule

pytestmark = [pytest.mark.redis, pytest.mark.faults]

BUSY_LUA = """
local t0 = redis.call('TIME')
repeat
  local t = redis.call('TIME')
until (t[1] - t0[1]) * 1000000 + (t[2] - t0[2]) > tonumber(ARGV[1])
return 1
"""


def _payload_counts(r: redis.Redis, partitions: int) -> Counter[str]:
    counts: Counter[str] = Counter()
    for p in range(partitions):
        for _, fields in r.xrange(f"stream:topic:orders:p:{p}"):
            counts[fields[b"payload"].decode()] += 1
    return counts


def test_four_movers_at_once_move_each_item_exactly_once(
    mq_config: MQConfig, r: redis.Redis
) -> None:
    Topics(mq_config).create("orders", 3)
    now = int(time.time() * 1000)
    expected = {f"m{i}" for i in range(400)}
    for i in range(400):
        schedule(r, mq_config.keys, "orders", i % 3, f"m{i}", due_ms=now - 1000 + i % 50)
    barrier = threading.Barrier(4)
    moved: list[int] = []
    errors: list[BaseException] = []

    def worker() -> None:
        mover = RetryMover(mq_config, batch=20)
        total = 0
        try:
            barrier.wait(10)
            while r.zcard(mq_config.keys.retry_zset("orders")):
                total += mover.move_due("orders")
        except BaseException as exc:
            errors.append(exc)
        finally:
            moved.append(total)
            mover.client.close()

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    counts = _payload_counts(r, 3)
    assert set(counts) == expected
    assert set(counts.values()) == {1}
    assert sum(moved) == 400  # each mover reports only what it moved itself
    assert r.zcard(mq_config.keys.retry_zset("orders")) == 0
    assert not r.keys(mq_config.keys.retry_item("orders", "*"))


def test_client_timeout_during_evalsha_then_retry(mq_config: MQConfig, r: redis.Redis) -> None:
    Topics(mq_config).create("orders", 2)
    now = int(time.time() * 1000)
    for i in range(30):
        schedule(r, mq_config.keys, "orders", i % 2, f"m{i}", due_ms=now - 100)
    impatient = mq_config.with_(socket_timeout=0.2, client_options={"retry": Retry(NoBackoff(), 0)})
    mover = RetryMover(impatient, batch=100)
    r.script_load(lua_source("move_retries"))  # so the late EVALSHA really runs
    blocker = redis.Redis.from_url(mq_config.url, socket_timeout=10)
    busy = threading.Thread(target=blocker.eval, args=(BUSY_LUA, 0, 600_000))

    def slow_call(*args: Any, **kwargs: Any) -> Any:
        # Redis is busy when the EVALSHA arrives: the client gives up, Redis runs it later.
        busy.start()
        time.sleep(0.05)
        return call_script(*args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(retry_module, "call_script", slow_call)
        with pytest.raises(ConnectionLostError):
            mover.move_due("orders")
    busy.join(10)
    blocker.close()
    # Redis ran the abandoned call after the busy script: the items have already moved.
    late_ran = r.zcard(mq_config.keys.retry_zset("orders")) == 0
    # The caller retries (a fresh connection); whatever ran before must not be re-added.
    deadline = time.monotonic() + 10
    while r.zcard(mq_config.keys.retry_zset("orders")) and time.monotonic() < deadline:
        mover.move_due("orders")
    counts = _payload_counts(r, 2)
    assert set(counts) == {f"m{i}" for i in range(30)}
    assert set(counts.values()) == {1}
    assert late_ran
    assert mover.move_due("orders") == 0
    mover.client.close()
