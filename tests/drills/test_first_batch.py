"""A consumer still working through its first batch: no status worse than WARN from a window
that is not full yet (issue: "no status from an incomplete window worse than WARN, unless
the rule's own condition is certain").

200 entries wait; a consumer starts, reads 100 at once and handles them in about 10 s,
acking as it goes; the passes start once it has read them. Its position (entries read) does
not move until it reads again, but its pending entries shrink at every pass: it is working.
The first passes see a window of 1 to 4 samples.
"""

from __future__ import annotations

import pytest

from mqcore.topics import Topics
from tests.drills.harness import Drill, send, wait_for

pytestmark = [pytest.mark.redis, pytest.mark.drills, pytest.mark.django_db]


def test_first_batch_is_not_stall_on_an_incomplete_window(drill: Drill) -> None:
    Topics(drill.config).create("orders", 1)
    send(drill.config, "orders", 200)
    drill.consumer("orders", batch=100, handle_ms=100, ack_batch=10)
    client = drill.config.client()
    try:
        stream = drill.config.keys.partition("orders", 0)
        wait_for(lambda: client.xpending(stream, "default-group")["pending"] >= 90, what="read")
    finally:
        client.close()
    drill.inject()
    for _ in range(4):  # windows of 1 to 4 samples: none full
        drill.collect()
    pending = drill.gauge("pending", "orders", 0)
    assert pending is not None
    assert pending < 100  # acking as it goes
    seen = drill.seen("orders")
    assert set(seen) <= {"OK", "WARN"}, seen
