"""Drill 1: a consumer process killed (SIGKILL) with pending entries: the leases move.

Two consumers share two partitions; one is killed mid-stream with entries pending. Its
leases expire (TTL 1.5 s here, 15 s by default) and the survivor takes them over, claims
the dead one's pending entries and drains the backlog. The take-over lands within the
window's span, before the STOP rule could fire: **no alert**, by design. The group may
show STALL for a pass or two while the lease runs out; it is never STOP, and it is OK again
once drained. The timeline has the take-over (or the expiry) naming the dead consumer.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from mqcore.topics import Topics
from tests.drills.harness import Drill, wait_for

pytestmark = [pytest.mark.redis, pytest.mark.drills, pytest.mark.django_db]


def test_killed_consumer_leases_move_and_backlog_drains(drill: Drill) -> None:
    Topics(drill.config).create("orders", 2)
    drill.producer("orders", rate=20)
    opts = {"ttl_ms": 1500, "claim_idle_ms": 1000}
    killed = drill.consumer("orders", max_partitions=1, handle_ms=80, **opts)
    survivor = drill.consumer("orders", **opts)
    client = drill.config.client()
    try:

        def working() -> set[str]:
            return {json.loads(r)["consumer"] for r in client.lrange("drill:sink:orders", -40, -1)}

        wait_for(lambda: working() == {killed.name, survivor.name}, what="both consumers work")
        drill.warm_up(3)
        wait_for(lambda: pending_of(drill, client, killed.name) > 0, what="entries pending")
        killed.stop(kill=True)  # within milliseconds of seeing its entries pending
        drill.inject()
    finally:
        client.close()
    assert drill.history[-1][("orders", "default-group")] == "OK"

    def took_over() -> bool:
        return any(
            e["data"].get("event") in ("taken_over", "expired")
            and e["data"].get("previous_owner") == killed.name
            for e in drill.timeline(topic="orders", kind="lease")
        )

    passes = drill.until("take-over", took_over, max_passes=6)
    assert passes <= 5  # the lease TTL (1.5 s), the rebalance, the pass that sees it
    drill.detected("1 consumer killed", "lease taken over (timeline)", passes)
    drill.until("OK", lambda: drill.status("orders") == "OK", max_passes=6)
    for _ in range(2):
        drill.collect()
    assert "STOP" not in drill.seen("orders")
    assert set(drill.partition_statuses("orders", "default-group").values()) == {"OK"}
    for p in ("0", "1"):
        lag = drill.gauge("lag", "orders", int(p))
        assert lag is not None
        assert lag < 40
    client = drill.config.client()
    try:
        assert pending_of(drill, client, killed.name) == 0  # claimed by the survivor
    finally:
        client.close()
    drill.assert_only_alerts()


def pending_of(drill: Drill, client: Any, consumer: str) -> int:
    """Entries pending on ``consumer`` over both partitions."""
    total = 0
    for p in (0, 1):
        summary = client.xpending(drill.config.keys.partition("orders", p), "default-group")
        total += sum(c["pending"] for c in summary["consumers"] if c["name"].decode() == consumer)
    return total
