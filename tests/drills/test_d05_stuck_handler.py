"""Drill 5: a handler stuck forever on one message: the oldest pending entry grows old.

Three messages, read in one batch; the handler hangs on the first. Nothing is undelivered,
so the group stays OK (lag 0): the signal is the oldest pending entry's idle time, whose
alert (compressed here to 3 s; 600 s by default) opens once it is past the limit, naming
the entry and the consumer holding it. A new
consumer, after the stuck one is killed, takes the entries over and the alert resolves.
"""

from __future__ import annotations

import pytest

from mqcore.topics import Topics
from tests.drills.harness import Drill, send

pytestmark = [pytest.mark.redis, pytest.mark.drills, pytest.mark.django_db]

ALERT = "oldest_pending:orders"
STUCK_MS = 3_600_000  # the handler sleeps for an hour on its first message


def stuck(drill: Drill, settings: object) -> None:
    settings.ALERT_OLDEST_PENDING_S = 3  # type: ignore[attr-defined]
    Topics(drill.config).create("orders", 1)
    drill.warm_up(1)
    send(drill.config, "orders", 3)
    drill.inject()


def test_stuck_handler_raises_oldest_pending(drill: Drill, settings: object) -> None:
    stuck(drill, settings)
    hung = drill.consumer("orders", handle_ms=STUCK_MS)
    passes = drill.until("oldest pending", lambda: ALERT in drill.opened(), max_passes=8)
    assert passes <= 6  # idle past 3 s, seen on the next pass
    at_default = 600 + 10  # past the 600 s limit, seen on the next pass
    drill.detected("5 stuck handler", "oldest pending alert", passes, default_s=at_default)
    assert set(drill.seen("orders")) == {"OK"}  # nothing undelivered: the status is fine
    oldest = drill.gauge("oldest_pending_seconds", "orders", 0)
    assert oldest is not None
    assert oldest > 3
    assert drill.gauge("pending", "orders", 0) == 3
    assert drill.metric("opsdash_alerts_open", rule="oldest_pending", severity="warning") == 1

    hung.stop(kill=True)
    drill.consumer("orders", ttl_ms=1500, claim_idle_ms=1000)
    drill.until("resolved", lambda: ALERT in drill.resolved(), max_passes=8)
    assert drill.gauge("pending", "orders", 0) == 0
    drill.assert_only_alerts(ALERT)


def test_stuck_pending_alert_names_entry_and_consumer(drill: Drill, settings: object) -> None:
    stuck(drill, settings)
    hung = drill.consumer("orders", handle_ms=STUCK_MS)
    drill.until("oldest pending", lambda: ALERT in drill.opened(), max_passes=8)
    message = drill.receiver.alert(ALERT)["message"]
    client = drill.config.client()
    try:
        entry = client.xpending(drill.config.keys.partition("orders", 0), "default-group")["min"]
    finally:
        client.close()
    assert hung.name in message
    assert entry.decode() in message
