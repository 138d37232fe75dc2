"""Running a bundled script keeps no client alive: the suite (and a long-lived process that
makes clients per cluster) ran out of file descriptors when every client that ever ran a
script stayed referenced, with its sockets, from a per-client script cache."""

from __future__ import annotations

import gc
import weakref

import redis

from mqcore.scripts import call_script, script_for


def test_a_client_that_ran_scripts_is_freed_with_its_sockets(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    client.script_flush()  # the first call loads the script (NOSCRIPT)
    assert (
        call_script(client, "stream_seek", ["stream:topic:none:p:0"], [100, "0-0", "+", 1])
        is not None
    )
    pool = client.connection_pool
    gone = weakref.ref(client)
    del client
    gc.collect()
    assert gone() is None
    assert script_for("stream_seek") is script_for("stream_seek")  # one per process
    pool.disconnect()
